// In-memory dataset: features as float rows [n, dim]; integer labels for classification or
// float targets [n, target_dim] for regression.
#pragma once
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace lbt::data {

struct Dataset {
  std::string name;
  std::int64_t n = 0, dim = 0;
  std::vector<std::int64_t> shape;   // per-example shape, e.g. {1, 28, 28}
  std::vector<float> x;              // [n, dim]
  std::vector<std::int32_t> labels;  // [n] when classification
  std::int64_t num_classes = 0;
  std::vector<float> targets;  // [n, target_dim] when regression
  std::int64_t target_dim = 0;

  bool is_classification() const { return num_classes > 0; }
  const float* row(std::int64_t i) const { return x.data() + i * dim; }
  // Copies example i into slot r of batch buffers x [*, dim], labels [*] and
  // targets [*, target_dim] (labels/targets written only when the dataset has them).
  void copy_example(std::int64_t i, std::int64_t r, float* batch_x, std::int32_t* batch_labels,
                    float* batch_targets) const {
    std::copy(row(i), row(i) + dim, batch_x + r * dim);
    if (is_classification()) batch_labels[r] = labels[i];
    if (target_dim > 0) {
      std::copy(targets.begin() + i * target_dim, targets.begin() + (i + 1) * target_dim,
                batch_targets + r * target_dim);
    }
  }
};

// Reserves `floats` values in `x` (empty) without touching them and asks the kernel for huge
// pages there (madvise; a no-op where there are none): filling Fashion-MNIST's 188 MB in 4 KiB
// pages took a page fault per 1024 floats, a third of a load's time on a virtual machine.
void reserve_untouched(std::vector<float>& x, std::size_t floats);

// Rows `indices` of `source`, in that order.
Dataset subset(const Dataset& source, const std::vector<std::int64_t>& indices);

// Splits off `validation_size` examples chosen by a seeded permutation (Shallue et al. tune
// on a validation split held out from the training set, never on the test set); each split
// keeps the examples' order. A `full` moved in becomes `train` in place: the training rows move
// down over the validation ones, with no second copy of the data (a 1 GB set peaked at 2 GB).
void split_validation(Dataset full, std::int64_t validation_size, std::uint64_t seed,
                      Dataset& train, Dataset& validation);

// Standardisation x = (x - mean) / std computed on `train` and applied to every split (so
// validation never leaks into the statistics): per channel for images ([C, H, W] shapes, as
// torchvision's Normalize on CIFAR-10), one scalar pair for anything else.
struct Normalization {
  std::vector<float> mean = {0.0f}, std = {1.0f};  // [channels]
};
Normalization fit_normalization(const Dataset& train);
void apply_normalization(Dataset& d, const Normalization& norm);

// Refuses `path` unless it is a regular file (symlinks followed): DataError "data file not
// found: PATH" with `missing_hint`, or naming a directory, a FIFO, socket or device, or a
// symlink loop. A FIFO blocked the load in open() for ever; a loop or a directory gave
// std::filesystem's bare message, exit 1 (2026-11-29 audit).
void require_regular_file(const std::filesystem::path& path, const std::string& missing_hint);
// A missing file's path as a message shows it: a relative one names the working directory it was
// looked for from ("cifar-10-batches-bin/data_batch_1.bin" alone left the user guessing).
std::string missing_path_text(const std::filesystem::path& path);

}  // namespace lbt::data
