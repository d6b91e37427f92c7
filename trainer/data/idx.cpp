// IDX reader through zlib's gzread, which reads gzip and plain files alike.
#include "trainer/data/idx.hpp"

#include <zlib.h>

#include <algorithm>
#include <memory>
#include <string>

#include "core/error.hpp"

namespace lbt::data {
namespace {

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

}  // namespace

IdxArray read_idx(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) {
    throw DataError("data file not found: " + path.string(),
                    "install Debian's dataset-fashion-mnist (scripts/setup.sh does) or set "
                    "data.path to the directory holding the IDX files");
  }
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
  if (!file) throw DataError("cannot open " + path.string(), "check file permissions");
  // A large buffer for dataset files, a small one for tiny files (fuzzing, tests).
  std::error_code size_error;
  const auto file_size = std::filesystem::file_size(path, size_error);
  gzbuffer(file.get(), size_error ? 1u << 16
                                  : static_cast<unsigned>(
                                        std::clamp<std::uintmax_t>(file_size, 8192, 1u << 20)));

  std::int64_t offset = 0;
  auto read_exact = [&](void* dst, std::size_t bytes, const char* what) {
    std::size_t done = 0;
    while (done < bytes) {
      int chunk = static_cast<int>(std::min<std::size_t>(bytes - done, 1 << 30));
      int n = gzread(file.get(), static_cast<char*>(dst) + done, chunk);
      if (n < 0) {
        int err = 0;
        throw DataError(path.string() + ": corrupt compressed data at byte " +
                            std::to_string(offset + done) + " (" + gzerror(file.get(), &err) + ")",
                        "the file is damaged: reinstall or re-download it");
      }
      if (n == 0) {
        throw DataError(path.string() + ": truncated " + what + ": expected " +
                            std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                            ", got " + std::to_string(done),
                        "the file is incomplete: reinstall or re-download it");
      }
      done += static_cast<std::size_t>(n);
    }
    offset += static_cast<std::int64_t>(bytes);
  };

  unsigned char magic[4];
  read_exact(magic, 4, "header");
  const std::uint32_t magic_value = (std::uint32_t(magic[0]) << 24) |
                                    (std::uint32_t(magic[1]) << 16) |
                                    (std::uint32_t(magic[2]) << 8) | magic[3];
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || magic[3] < 1 || magic[3] > 4) {
    throw DataError(path.string() + ": not an unsigned-byte IDX file: magic at byte 0 is " +
                        hex(magic_value) + ", expected 0x0000080N (N = 1..4 dimensions)",
                    "check that data.path points at MNIST-format IDX files");
  }
  IdxArray out;
  std::int64_t total = 1;
  for (int d = 0; d < magic[3]; ++d) {
    unsigned char b[4];
    read_exact(b, 4, "dimension sizes");
    std::int64_t size =
        (std::int64_t(b[0]) << 24) | (std::int64_t(b[1]) << 16) | (std::int64_t(b[2]) << 8) | b[3];
    if (size <= 0 || size > (1ll << 31)) {
      throw DataError(path.string() + ": implausible dimension " + std::to_string(d) + " = " +
                      std::to_string(size) + " at byte " + std::to_string(offset - 4));
    }
    out.dims.push_back(size);
    total *= size;
    if (total > (1ll << 34)) throw DataError(path.string() + ": header describes over 16 GiB");
  }
  out.bytes.resize(static_cast<std::size_t>(total));
  read_exact(out.bytes.data(), out.bytes.size(), "payload");
  unsigned char extra;
  if (gzread(file.get(), &extra, 1) > 0) {
    throw DataError(path.string() + ": " + std::to_string(offset) +
                        " bytes expected from the header, but the file is longer",
                    "the header and payload disagree: the file is damaged");
  }
  return out;
}

Dataset load_idx_pair(const std::filesystem::path& images, const std::filesystem::path& labels,
                      std::int64_t num_classes, const std::string& name) {
  IdxArray img = read_idx(images);
  IdxArray lab = read_idx(labels);
  if (img.dims.size() < 2) {
    throw DataError(images.string() + ": expected an images file with >= 2 dimensions, got " +
                    std::to_string(img.dims.size()));
  }
  if (lab.dims.size() != 1) {
    throw DataError(labels.string() + ": expected a 1-dimensional labels file, got " +
                    std::to_string(lab.dims.size()) + " dimensions");
  }
  if (img.dims[0] != lab.dims[0]) {
    throw DataError(images.string() + " holds " + std::to_string(img.dims[0]) + " images but " +
                        labels.string() + " holds " + std::to_string(lab.dims[0]) + " labels",
                    "the two files must come from the same split (train or t10k)");
  }
  Dataset d;
  d.name = name;
  d.n = img.dims[0];
  d.dim = 1;
  d.shape = {1};
  for (std::size_t i = 1; i < img.dims.size(); ++i)
    d.dim *= img.dims[i], d.shape.push_back(img.dims[i]);
  d.num_classes = num_classes;
  // Converted into untouched memory (resize() would zero 4 bytes per pixel first).
  reserve_untouched(d.x, img.bytes.size());
  d.x.insert(d.x.end(), img.bytes.begin(), img.bytes.end());
  for (float& v : d.x) v *= 1.0f / 255.0f;
  d.labels.resize(static_cast<std::size_t>(d.n));
  for (std::int64_t i = 0; i < d.n; ++i) {
    if (lab.bytes[i] >= num_classes) {
      throw DataError(labels.string() + ": label " + std::to_string(lab.bytes[i]) + " at index " +
                          std::to_string(i) + " (byte " + std::to_string(8 + i) + ") is not < " +
                          std::to_string(num_classes),
                      "check data.num_classes or the labels file");
    }
    d.labels[i] = lab.bytes[i];
  }
  return d;
}

}  // namespace lbt::data
