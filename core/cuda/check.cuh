// One-line errors for the CUDA libraries' status codes (CUDA runtime, cuBLAS, NCCL, cuDNN).
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <string>

#include "core/error.hpp"

namespace lbt::cuda {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw DeviceError(std::string(what) + ": " + cudaGetErrorString(e));
}
inline void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw DeviceError(std::string(what) + ": " + cublasGetStatusString(s));
}
inline void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw DeviceError(std::string(what) + ": " + ncclGetErrorString(r));
}
inline void check(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS)
    throw DeviceError(std::string(what) + ": " + cudnnGetErrorString(s));
}

}  // namespace lbt::cuda
