// Dataset loading by name; see load.hpp.
#include "trainer/data/load.hpp"

#include <algorithm>
#include <filesystem>
#include <new>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "core/error.hpp"
#include "trainer/data/cifar10.hpp"
#include "trainer/data/csv.hpp"
#include "trainer/data/idx.hpp"
#include "trainer/data/npy.hpp"
#include "trainer/data/synthetic.hpp"

namespace lbt::data {
namespace {

// A directory where a data file is expected would surface as a raw system error ("Is a
// directory") from the reader: say which key names it and what it should name instead.
void require_file(const std::filesystem::path& path, const std::string& key) {
  std::error_code ec;  // a symlink loop: the reader's error names it
  if (!path.empty() && std::filesystem::is_directory(path, ec)) {
    throw DataError(key + " = " + path.string() + " is a directory, not a data file",
                    "set " + key + " to the file itself (e.g. " + (path / "x_train.npy").string() +
                        "); only data.path names a directory");
  }
}

std::filesystem::path find_idx(const std::filesystem::path& dir, const std::string& stem) {
  std::vector<std::filesystem::path> found;
  for (const char* suffix : {".gz", ""}) {
    auto p = dir / (stem + suffix);
    std::error_code ec;  // a symlink loop counts as there: the reader's error names it
    if (std::filesystem::is_directory(p, ec)) {
      throw DataError(p.string() + " is a directory, not the IDX file " + stem + suffix,
                      "set data.path to the directory holding the IDX files themselves");
    }
    if (std::filesystem::symlink_status(p, ec).type() != std::filesystem::file_type::not_found &&
        !ec)
      found.push_back(p);
  }
  // Both (gunzip -k keeps the .gz): the .gz was read without a word, stale if the other was
  // the one edited or replaced.
  if (found.size() == 2) {
    throw DataError("both " + found[0].string() + " and " + stem +
                        " beside it: lbt cannot tell which one holds the data",
                    "remove or move the one that is not meant");
  }
  if (!found.empty()) return found.front();
  throw DataError("data file not found: " + missing_path_text(dir / (stem + "[.gz]")),
                  "install Debian's dataset-fashion-mnist (bash scripts/setup.sh does it) or set "
                  "data.path to a directory holding " +
                      stem + "[.gz]");
}

// By value: without a limit the data move through (a copy of Fashion-MNIST's 188 MB of floats
// was a fifth of every load's time).
Dataset truncate(Dataset d, std::int64_t limit) {
  if (limit <= 0 || limit >= d.n) return d;
  std::vector<std::int64_t> first(static_cast<std::size_t>(limit));
  std::iota(first.begin(), first.end(), 0);
  return subset(d, first);
}

// One class leaves a classifier nothing to learn: with its last layer sized to it, the loss is
// 0 from the first step, and the run "completed" at val_accuracy 1.0 (2026-11-29 audit).
void refuse_one_class(const Dataset& d, const trainer::DataConfig& config) {
  if (!d.is_classification() || d.labels.empty()) return;
  const auto [lowest, highest] = std::minmax_element(d.labels.begin(), d.labels.end());
  if (*lowest != *highest) return;
  const std::string labels = config.format == "npy"   ? config.train_labels
                             : config.format == "csv" ? config.train_features
                                                      : config.dataset;
  throw DataError(labels + ": every training label is " + std::to_string(*lowest) +
                      ": one class leaves a classifier nothing to learn",
                  "check the labels (the file, or data.label_column); real-valued targets train "
                  "a regression (npy: float32/float64 labels; CSV: data.target_columns)");
}

Splits load_splits_unchecked(const trainer::DataConfig& config, std::uint64_t seed) {
  Splits s;
  Dataset full;
  if (config.dataset != "synthetic-regression" &&
      (config.format == "npy" || config.format == "csv")) {
    require_file(config.train_features, "data.train_features");
    require_file(config.train_labels, "data.train_labels");
    require_file(config.test_features, "data.test_features");
    require_file(config.test_labels, "data.test_labels");
  }
  if (config.dataset == "synthetic-regression") {
    full = make_linear_regression(config.synthetic_examples, config.synthetic_dim,
                                  config.synthetic_noise, seed)
               .data;
  } else if (config.format == "cifar10") {
    full = load_cifar10(config.path, false, config.dataset);
    s.test = load_cifar10(config.path, true, config.dataset + "-test");
  } else if (config.format == "npy") {
    full = load_npy_pair(config.train_features, config.train_labels, config.image_shape,
                         config.num_classes, config.dataset);
    if (!config.test_features.empty()) {
      s.test = load_npy_pair(config.test_features, config.test_labels, config.image_shape,
                             full.num_classes, config.dataset + "-test");
    }
  } else if (config.format == "csv") {
    CsvOptions options{config.label_column, config.target_columns, config.csv_header,
                       config.image_shape, config.num_classes};
    full = load_csv(config.train_features, options, config.dataset);
    if (!config.test_features.empty()) {
      options.num_classes = full.num_classes;
      s.test = load_csv(config.test_features, options, config.dataset + "-test");
    }
  } else {
    const std::filesystem::path dir = config.path;
    const auto train_images = find_idx(dir, "train-images-idx3-ubyte"),
               test_images = find_idx(dir, "t10k-images-idx3-ubyte");
    // The image shapes before any pixel: a 261 KB gzip declaring 16384 x 16384 training images
    // took 1 GB before the shapes were compared (2026-11-30 audit).
    const auto image_shape = [](const std::filesystem::path& file) {
      std::string text;
      const auto dims = idx_shape(file);
      for (std::size_t i = 1; i < dims.size(); ++i) {
        if (i > 1) text += 'x';  // not ("x" or "") + ...: GCC 12's -Wrestrict false positive
        text += std::to_string(dims[i]);
      }
      return text;
    };
    if (const std::string train = image_shape(train_images), test = image_shape(test_images);
        train != test) {
      throw DataError(train_images.string() + " declares " + train + " images, " +
                          test_images.string() + " " + test,
                      "the test files must have the training files' layout");
    }
    full = load_idx_pair(train_images, find_idx(dir, "train-labels-idx1-ubyte"), 10, config.dataset,
                         config.train_limit);
    s.test = load_idx_pair(test_images, find_idx(dir, "t10k-labels-idx1-ubyte"), 10,
                           config.dataset + "-test");
  }
  if (s.test.n > 0 && s.test.dim != full.dim) {
    throw DataError(config.dataset + ": test examples have " + std::to_string(s.test.dim) +
                        " features but training examples have " + std::to_string(full.dim),
                    "the test files must have the training files' layout");
  }
  if (s.test.n > 0 && s.test.target_dim != full.target_dim) {
    throw DataError(config.dataset + ": test examples have " + std::to_string(s.test.target_dim) +
                        " regression targets each but training examples have " +
                        std::to_string(full.target_dim),
                    "save the test labels with the training labels' dtype and shape");
  }
  if (config.train_limit > full.n) {
    // "The first N" of fewer than N examples silently trained on fewer than the config said.
    throw DataError(
        "data.train_limit = " + std::to_string(config.train_limit) + " but " + config.dataset +
            " holds " + std::to_string(full.n) + " training examples",
        "set data.train_limit to at most " + std::to_string(full.n) + ", or to 0 for all of them");
  }
  full = truncate(std::move(full), config.train_limit);
  refuse_one_class(full, config);
  if (config.validation_size > 0) {
    split_validation(std::move(full), config.validation_size, seed, s.train, s.validation);
  } else {
    s.train = std::move(full);
  }
  if (config.normalize && config.dataset != "synthetic-regression") {
    s.normalization = fit_normalization(s.train);
    apply_normalization(s.train, s.normalization);
    apply_normalization(s.validation, s.normalization);
    if (s.test.n > 0) apply_normalization(s.test, s.normalization);
  }
  return s;
}

}  // namespace

Splits load_splits(const trainer::DataConfig& config, std::uint64_t seed) {
  try {
    try {
      return load_splits_unchecked(config, seed);
    } catch (const std::length_error&) {  // a size past any vector's: as large as no memory holds
      throw std::bad_alloc();
    }
  } catch (const std::bad_alloc&) {
    // A bare "std::bad_alloc", exit 1, named nothing: an IDX gzip of 1 MB whose header promised
    // 1.4M images peaked at 8.65 GB before (2026-11-29 audit).
    if (config.dataset == "synthetic-regression")  // no files, no train_limit to read fewer
      throw DataError("synthetic-regression: its " + std::to_string(config.synthetic_examples) +
                          " examples of " + std::to_string(config.synthetic_dim) +
                          " features do not fit in this process's memory",
                      "generate fewer: lower data.synthetic.examples or data.synthetic.dim");
    throw DataError(config.dataset +
                        ": its examples do not fit in this process's memory "
                        "(an allocation failed while loading them)",
                    "load fewer with data.train_limit, or check the files: a header may promise "
                    "far more examples than the data holds");
  }
}

std::vector<DataFile> data_files(const trainer::DataConfig& config) {
  std::vector<DataFile> files;
  if (config.dataset == "synthetic-regression") return files;
  if (config.format == "cifar10") {
    for (int i = 1; i <= 5; ++i)
      files.push_back({"data.path", std::filesystem::path(config.path) /
                                        ("data_batch_" + std::to_string(i) + ".bin")});
    files.push_back({"data.path", std::filesystem::path(config.path) / "test_batch.bin"});
  } else if (config.format == "npy" || config.format == "csv") {
    const std::pair<const char*, const std::string*> keys[] = {
        {"data.train_features", &config.train_features},
        {"data.train_labels", &config.train_labels},
        {"data.test_features", &config.test_features},
        {"data.test_labels", &config.test_labels}};
    for (const auto& [key, path] : keys) {
      if (!path->empty()) files.push_back({key, *path});
    }
  } else {
    for (const char* stem : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                             "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
      files.push_back({"data.path", find_idx(config.path, stem)});
    }
  }
  return files;
}

}  // namespace lbt::data
