// Dataset helpers; see dataset.hpp.
#include "trainer/data/dataset.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <utility>

#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "core/error.hpp"
#include "core/rng.hpp"
#include "trainer/data/sampler.hpp"

namespace lbt::data {

void reserve_untouched(std::vector<float>& x, std::size_t floats) {
  x.reserve(floats);
#ifdef __linux__
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const auto begin = (reinterpret_cast<std::uintptr_t>(x.data()) + kHuge - 1) & ~(kHuge - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(x.data() + x.capacity()) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#endif
}

Dataset subset(const Dataset& source, const std::vector<std::int64_t>& indices) {
  Dataset out;
  out.name = source.name;
  out.n = static_cast<std::int64_t>(indices.size());
  out.dim = source.dim;
  out.shape = source.shape;
  out.num_classes = source.num_classes;
  out.target_dim = source.target_dim;
  // Appended row by row into reserved memory: resize() would first zero every byte the rows
  // then overwrite (Fashion-MNIST's split wrote 188 MB twice).
  reserve_untouched(out.x, static_cast<std::size_t>(out.n * out.dim));
  for (const std::int64_t i : indices)
    out.x.insert(out.x.end(), source.row(i), source.row(i) + out.dim);
  if (source.is_classification()) out.labels.resize(static_cast<std::size_t>(out.n));
  if (source.target_dim > 0) out.targets.resize(static_cast<std::size_t>(out.n * out.target_dim));
  for (std::int64_t r = 0; r < out.n; ++r) {
    const auto i = indices[static_cast<std::size_t>(r)];
    if (source.is_classification()) out.labels[r] = source.labels[i];
    if (source.target_dim > 0)
      std::copy(source.targets.begin() + i * out.target_dim,
                source.targets.begin() + (i + 1) * out.target_dim,
                out.targets.begin() + r * out.target_dim);
  }
  return out;
}

namespace {

// Gives the pages past x's size back to the system (they stay reserved, never read): the
// validation rows' old place would otherwise stay resident for the whole run (30 MiB of
// Fashion-MNIST). shrink_to_fit would copy the training rows, the peak the split avoids.
void release_spare(std::vector<float>& x) {
#ifdef __linux__
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin =
      (reinterpret_cast<std::uintptr_t>(x.data() + x.size()) + page - 1) & ~(page - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(x.data() + x.capacity()) & ~(page - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
#else
  (void)x;
#endif
}

// Keeps rows `keep` (ascending) of `d`, moved down in place.
void keep_rows(Dataset& d, const std::vector<std::int64_t>& keep) {
  const std::int64_t n = static_cast<std::int64_t>(keep.size());
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t i = keep[static_cast<std::size_t>(r)];
    if (i == r) continue;  // r < i from here on: each row moves to a lower one, already read
    std::copy(d.row(i), d.row(i) + d.dim, d.x.begin() + r * d.dim);
    if (d.is_classification()) d.labels[r] = d.labels[i];
    if (d.target_dim > 0)
      std::copy(d.targets.begin() + i * d.target_dim, d.targets.begin() + (i + 1) * d.target_dim,
                d.targets.begin() + r * d.target_dim);
  }
  d.n = n;
  d.x.resize(static_cast<std::size_t>(n * d.dim));
  release_spare(d.x);
  if (d.is_classification()) d.labels.resize(static_cast<std::size_t>(n));
  if (d.target_dim > 0) d.targets.resize(static_cast<std::size_t>(n * d.target_dim));
}

}  // namespace

void split_validation(Dataset full, std::int64_t validation_size, std::uint64_t seed,
                      Dataset& train, Dataset& validation) {
  if (full.n == 0)
    throw ConfigError(full.name + " has no training examples (its training files hold 0 rows)",
                      "point data.* at files with examples");
  if (validation_size < 0 || validation_size >= full.n) {
    // The example is a fifth of what there is (the hint once said 10000 whatever the data).
    throw ConfigError("data.validation_size must be in [0, " + std::to_string(full.n) + ") for " +
                          full.name + ", got " + std::to_string(validation_size),
                      "hold out fewer examples than the " + std::to_string(full.n) +
                          ", e.g. --set data.validation_size=" + std::to_string(full.n / 5));
  }
  auto rng = make_rng(seed, RngStream::kValidationSplit);
  std::vector<std::int64_t> perm = permutation(full.n, rng);
  std::vector<std::int64_t> val(perm.begin(), perm.begin() + validation_size);
  std::vector<std::int64_t> tr(perm.begin() + validation_size, perm.end());
  // Keep the original order inside each split so a split is a stable function of the seed.
  std::sort(val.begin(), val.end());
  std::sort(tr.begin(), tr.end());
  validation = subset(full, val);
  keep_rows(full, tr);
  train = std::move(full);
}

namespace {
// Channels and values per channel of one example: [C, H, W] -> (C, H*W); else (1, dim).
std::pair<std::int64_t, std::int64_t> channel_layout(const Dataset& d) {
  if (d.shape.size() == 3 && d.shape[0] * d.shape[1] * d.shape[2] == d.dim) {
    return {d.shape[0], d.shape[1] * d.shape[2]};
  }
  return {1, d.dim};
}
}  // namespace

Normalization fit_normalization(const Dataset& train) {
  const auto [channels, plane] = channel_layout(train);
  Normalization norm;
  norm.mean.assign(static_cast<std::size_t>(channels), 0.0f);
  norm.std.assign(static_cast<std::size_t>(channels), 1.0f);
  for (std::int64_t c = 0; c < channels; ++c) {
    double sum = 0.0, sq = 0.0;
    for (std::int64_t i = 0; i < train.n; ++i) {
      const float* p = train.row(i) + c * plane;
      for (std::int64_t j = 0; j < plane; ++j) sum += p[j], sq += static_cast<double>(p[j]) * p[j];
    }
    const double count = static_cast<double>(train.n * plane);
    const double mean = sum / count;
    const double var = std::max(sq / count - mean * mean, 1e-12);
    norm.mean[c] = static_cast<float>(mean);
    norm.std[c] = static_cast<float>(std::sqrt(var));
  }
  return norm;
}

void apply_normalization(Dataset& d, const Normalization& norm) {
  const auto [channels, plane] = channel_layout(d);
  if (static_cast<std::int64_t>(norm.mean.size()) != channels) {
    throw DataError(d.name + ": normalisation has " + std::to_string(norm.mean.size()) +
                    " channels but the examples have " + std::to_string(channels));
  }
  for (std::int64_t i = 0; i < d.n; ++i) {
    for (std::int64_t c = 0; c < channels; ++c) {
      float* p = d.x.data() + i * d.dim + c * plane;
      const float mean = norm.mean[c], inv = 1.0f / norm.std[c];
      for (std::int64_t j = 0; j < plane; ++j) p[j] = (p[j] - mean) * inv;
    }
  }
}

std::string missing_path_text(const std::filesystem::path& path) {
  if (path.is_absolute()) return path.string();
  std::error_code ec;
  const std::filesystem::path cwd = std::filesystem::current_path(ec);
  return path.string() + (ec ? "" : " (from the working directory " + cwd.string() + ")");
}

void require_regular_file(const std::filesystem::path& path, const std::string& missing_hint) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (st.type() == std::filesystem::file_type::not_found)
    throw DataError("data file not found: " + missing_path_text(path), missing_hint);
  if (ec)
    throw DataError(path.string() + ": " + ec.message(),
                    "point the key at the data file itself (a symlink loop, or no permission)");
  if (std::filesystem::is_directory(st))
    throw DataError(path.string() + " is a directory, not a data file", missing_hint);
  if (!std::filesystem::is_regular_file(st))
    throw DataError(path.string() + " is not a regular file (a FIFO, socket or device)",
                    "lbt reads a data file whole: point the key at the file itself");
}

}  // namespace lbt::data
