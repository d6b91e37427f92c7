// CIFAR-10, .npy and CSV readers on small files written here, every bad-input case, per-channel
// normalisation and augmentation.
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "support/reader_files.hpp"
#include "trainer/data/augment.hpp"
#include "trainer/data/cifar10.hpp"
#include "trainer/data/csv.hpp"
#include "trainer/data/load.hpp"
#include "trainer/data/npy.hpp"

using namespace lbt;
using namespace lbt::test;
namespace fs = std::filesystem;

namespace {

std::string cifar_record(unsigned char label, unsigned char fill) {
  std::string r(3073, static_cast<char>(fill));
  r[0] = static_cast<char>(label);
  r[1] = 0;                              // R channel, pixel (0, 0)
  r[1 + 1024] = static_cast<char>(255);  // G channel, pixel (0, 0)
  return r;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(readers)

BOOST_AUTO_TEST_CASE(cifar10_records_read_as_nchw_images_with_labels) {
  Dir dir;
  auto p = dir.write("data_batch_1.bin", cifar_record(3, 51) + cifar_record(9, 102));
  data::Dataset d;
  data::append_cifar10_file(p, d);
  BOOST_TEST(d.n == 2);
  BOOST_TEST(d.dim == 3072);
  BOOST_TEST((d.shape == std::vector<std::int64_t>{3, 32, 32}));
  BOOST_TEST(d.labels[0] == 3);
  BOOST_TEST(d.labels[1] == 9);
  BOOST_TEST(d.row(0)[0] == 0.0f);
  BOOST_TEST(d.row(0)[1024] == 1.0f);
  BOOST_TEST(std::abs(d.row(1)[5] - 0.4f) < 1e-6f);
}

BOOST_AUTO_TEST_CASE(
    cifar10_truncated_record_wrong_record_size_bad_label_and_missing_file_are_data_errors) {
  Dir dir;
  auto truncated = dir.write("t.bin", cifar_record(1, 0) + cifar_record(2, 0).substr(0, 1000));
  auto msg = data_error_of([&] {
    data::Dataset d;
    data::append_cifar10_file(truncated, d);
  });
  BOOST_TEST(has(msg, truncated.string()));
  BOOST_TEST(has(msg, "truncated record of 1000 bytes at offset 3073"));
  // CIFAR-100 records are 3074 bytes: the size is not a multiple of 3073.
  auto cifar100 = dir.write("c100.bin", std::string(3074 * 3, '\1'));
  msg = data_error_of([&] {
    data::Dataset d;
    data::append_cifar10_file(cifar100, d);
  });
  BOOST_TEST(has(msg, "3073-byte records"));
  BOOST_TEST(has(msg, "CIFAR-100"));
  auto bad_label = dir.write("l.bin", cifar_record(1, 0) + cifar_record(12, 0));
  msg = data_error_of([&] {
    data::Dataset d;
    data::append_cifar10_file(bad_label, d);
  });
  BOOST_TEST(has(msg, "label 12 of record 1 (byte 3073)"));
  msg = data_error_of([&] { data::load_cifar10(dir.path / "nowhere", false, "cifar10"); });
  BOOST_TEST(has(msg, "data_batch_1.bin"));
  BOOST_TEST(has(msg, "cifar-10-batches-bin"));
}

BOOST_AUTO_TEST_CASE(csv_reads_label_by_name_or_index_with_optional_header) {
  Dir dir;
  auto named = dir.write("a.csv", "f1,label,f2\n0.5,1,2\n-1,0,3e1\n");
  auto d = data::load_csv(named, {.label_column = "label"}, "t");
  BOOST_TEST(d.n == 2);
  BOOST_TEST(d.dim == 2);
  BOOST_TEST(d.labels[0] == 1);
  BOOST_TEST(d.row(1)[1] == 30.0f);
  BOOST_TEST(d.num_classes == 2);
  auto bare = dir.write("b.csv", "3,1,2,3,4\r\n0,5,6,7,8\r\n");
  auto e = data::load_csv(bare, {.label_column = "0", .image_shape = {1, 2, 2}}, "t");
  BOOST_TEST(e.labels[0] == 3);
  BOOST_TEST(e.row(1)[3] == 8.0f);
  BOOST_TEST((e.shape == std::vector<std::int64_t>{1, 2, 2}));
}

// Hostile files of the 2026-11-29 audit: a FIFO (open() blocked for ever), a symlink loop
// (std::filesystem's bare error, exit 1), a float64 past float32's range (checked as a double,
// trained as inf), a negative or empty shape, a CSV's byte-order mark.
BOOST_AUTO_TEST_CASE(fifos_loops_float32_overflow_bad_shapes_and_a_bom_are_handled) {
  Dir dir;
  const fs::path fifo = dir.path / "fifo.npy", loop = dir.path / "loop.npy";
  BOOST_REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  fs::create_symlink(loop, loop);
  BOOST_TEST(has(data_error_of([&] { data::read_npy(fifo); }), "is not a regular file"));
  BOOST_TEST(has(data_error_of([&] { data::load_csv(fifo, {}, "t"); }), "is not a regular file"));
  BOOST_TEST(has(data_error_of([&] { data::read_npy(loop); }), "symbolic links"));
  auto labels = dir.write("y.npy", npy("<i8", "(2,)", raw(std::vector<std::int64_t>{0, 1})));
  auto wide = dir.write("w.npy", npy("<f8", "(2, 2)", raw(std::vector<double>{1, 2, 3, 1e300})));
  BOOST_TEST(has(data_error_of([&] { data::load_npy_pair(wide, labels, {}, 0, "t"); }),
                 "w.npy: a feature of example index 1 is 1e+300, not a finite number as a "
                 "float32"));
  auto negative = dir.write("n.npy", npy("<f4", "(-2, 2)", raw(std::vector<float>(4, 1.0f))));
  BOOST_TEST(has(data_error_of([&] { data::read_npy(negative); }), "not a tuple of whole"));
  auto empty = dir.write("e.npy", npy("<f4", "(2, 0)", ""));
  BOOST_TEST(has(data_error_of([&] { data::load_npy_pair(empty, labels, {}, 0, "t"); }),
                 "its examples have no features"));
  // A label past data.num_classes is named with its index (it was not).
  auto x4 = dir.write("x4.npy", npy("<f4", "(2, 2)", raw(std::vector<float>(4, 1.0f))));
  auto stray = dir.write("s.npy", npy("<i8", "(2,)", raw(std::vector<std::int64_t>{7, 1})));
  BOOST_TEST(has(data_error_of([&] { data::load_npy_pair(x4, stray, {}, 3, "t"); }),
                 "label 7 at index 0 is not < data.num_classes = 3"));
  auto minus = dir.write("m.npy", npy("<i8", "(2,)", raw(std::vector<std::int64_t>{0, -1})));
  BOOST_TEST(has(data_error_of([&] { data::load_npy_pair(x4, minus, {}, 0, "t"); }),
                 "label -1 at index 1 is not"));
  auto hex = dir.write("hex.csv", "label,f1\n1,0x10\n");
  BOOST_TEST(has(data_error_of([&] { data::load_csv(hex, {}, "t"); }), "('0x10') is not a number"));
  auto bom = dir.write("bom.csv", "\xEF\xBB\xBFlabel,f1\n1,0.5\n0,2\n");
  BOOST_TEST(data::load_csv(bom, {.label_column = "label"}, "t").n == 2);
}

// A relative path that is missing names the directory it was looked for from (the CIFAR preset's
// "data file not found: cifar-10-batches-bin/data_batch_1.bin" left the user guessing).
BOOST_AUTO_TEST_CASE(a_missing_relative_path_names_the_working_directory) {
  const std::string relative = data_error_of([] { data::read_npy("no-such-dir/x.npy"); });
  BOOST_TEST(has(relative, "data file not found: no-such-dir/x.npy (from the working directory " +
                               fs::current_path().string() + ")"),
             relative);
  const std::string absolute = data_error_of([] { data::read_npy("/no-such-dir/x.npy"); });
  BOOST_TEST(!has(absolute, "working directory"), absolute);
}

// 2^63 - 1 synthetic examples: examples x features passed int64, "vector::_M_default_append",
// exit 1 (2026-11-30 audit).
BOOST_AUTO_TEST_CASE(synthetic_examples_past_any_memory_say_so) {
  trainer::DataConfig config{.dataset = "synthetic-regression"};
  config.synthetic_examples = std::numeric_limits<std::int64_t>::max();
  const std::string error = data_error_of([&] { data::load_splits(config, 0); });
  BOOST_TEST(has(error, "features do not fit in this process's memory"), error);
}

BOOST_AUTO_TEST_CASE(csv_missing_fields_non_numbers_and_unknown_columns_name_file_and_line) {
  Dir dir;
  auto missing = dir.write("m.csv", "label,a,b\n1,2,3\n0,4\n");
  auto msg = data_error_of([&] { data::load_csv(missing, {}, "t"); });
  BOOST_TEST(has(msg, missing.string() + ":3: expected 3 fields, got 2"));
  auto empty_field = dir.write("e.csv", "label,a,b\n1,,3\n");
  BOOST_TEST(has(data_error_of([&] { data::load_csv(empty_field, {}, "t"); }),
                 ":2: field 2 ('') is not a number"));
  auto word = dir.write("w.csv", "label,a\n1,2\n0,abc\n");
  msg = data_error_of([&] { data::load_csv(word, {}, "t"); });
  BOOST_TEST(has(msg, word.string() + ":3: field 2 ('abc') is not a number"));
  BOOST_TEST(has(data_error_of([&] { data::load_csv(word, {.label_column = "class"}, "t"); }),
                 "no column named 'class'"));
  auto bad_label = dir.write("l.csv", "label,a\n1.5,2\n");
  BOOST_TEST(has(data_error_of([&] { data::load_csv(bad_label, {}, "t"); }), ":2: label 1.5"));
  BOOST_TEST(
      has(data_error_of([&] { data::load_csv(dir.path / "none.csv", {}, "t"); }), "none.csv"));
}

BOOST_AUTO_TEST_CASE(float_npy_labels_are_regression_targets_and_integer_labels_stay_classes) {
  Dir dir;
  auto x = dir.write("x.npy", npy("<f4", "(3, 2)", raw(std::vector<float>{1, 2, 3, 4, 5, 6})));
  auto y2 =
      dir.write("y2.npy", npy("<f8", "(3, 2)", raw(std::vector<double>{0.5, -1, 2, 3, 4.25, 5})));
  auto d = data::load_npy_pair(x, y2, {}, 0, "t");
  BOOST_TEST(!d.is_classification());
  BOOST_TEST(d.target_dim == 2);
  BOOST_TEST((d.targets == std::vector<float>{0.5f, -1, 2, 3, 4.25f, 5}));
  auto y1 = dir.write("y1.npy", npy("<f4", "(3,)", raw(std::vector<float>{1, 0, 1})));
  BOOST_TEST(data::load_npy_pair(x, y1, {}, 0, "t").target_dim == 1);  // float: regression
  auto yi = dir.write("yi.npy", npy("<i8", "(3,)", raw(std::vector<std::int64_t>{1, 0, 2})));
  auto c = data::load_npy_pair(x, yi, {}, 0, "t");
  BOOST_TEST(c.num_classes == 3);
  BOOST_TEST(c.target_dim == 0);
  auto inf_x =
      dir.write("xi.npy", npy("<f4", "(3, 2)", raw(std::vector<float>{1, 2, 3, 4, INFINITY, 6})));
  BOOST_TEST(has(data_error_of([&] { data::load_npy_pair(inf_x, y1, {}, 0, "t"); }),
                 "xi.npy: a feature of example index 2 is inf"));
}

BOOST_AUTO_TEST_CASE(csv_target_columns_by_name_or_index_and_their_errors_name_line_and_column) {
  Dir dir;
  auto f = dir.write("r.csv", "a,y1,b,y2\n1,0.5,2,-3\n4,1.5,5,6e-1\n");
  auto d = data::load_csv(f, {.target_columns = {"y2", "y1"}}, "t");
  BOOST_TEST(d.dim == 2);
  BOOST_TEST(d.target_dim == 2);
  BOOST_TEST((d.x == std::vector<float>{1, 2, 4, 5}));
  BOOST_TEST((d.targets == std::vector<float>{-3, 0.5f, 0.6f, 1.5f}));  // in the listed order
  auto by_index = data::load_csv(f, {.target_columns = {"3"}}, "t");
  BOOST_TEST(by_index.dim == 3);
  BOOST_TEST((by_index.targets == std::vector<float>{-3, 0.6f}));
  auto nan = dir.write("n.csv", "a,y\n1,2\n3,nan\n");
  BOOST_TEST(has(data_error_of([&] { data::load_csv(nan, {.target_columns = {"y"}}, "t"); }),
                 nan.string() + ":3: target column 'y' (field 2) is 'nan', not a finite number"));
  auto word = dir.write("wt.csv", "1,2\n3,abc\n");
  BOOST_TEST(has(data_error_of([&] { data::load_csv(word, {.target_columns = {"1"}}, "t"); }),
                 word.string() + ":2: target column 1 (field 2) is 'abc'"));
  auto empty = dir.write("et.csv", "a,y\n1,\n");
  BOOST_TEST(has(data_error_of([&] { data::load_csv(empty, {.target_columns = {"y"}}, "t"); }),
                 ":2: target column 'y' (field 2) is empty"));
  BOOST_TEST(has(data_error_of([&] { data::load_csv(f, {.target_columns = {"z"}}, "t"); }),
                 "no column named 'z'"));
}

// Each example keeps its own row, label and targets, each split in the data's order, whether
// `full` is moved in (the training rows moved down in place, no second copy) or copied.
BOOST_AUTO_TEST_CASE(a_validation_split_moved_in_place_keeps_every_examples_row_in_order) {
  for (const bool regression : {false, true}) {
    data::Dataset full;
    full.n = 1000, full.dim = 3, full.num_classes = regression ? 0 : 7;
    full.target_dim = regression ? 2 : 0;
    for (std::int64_t i = 0; i < full.n; ++i) {
      full.x.insert(full.x.end(), {float(i), float(i) + 0.25f, float(i) + 0.5f});
      if (regression)
        full.targets.insert(full.targets.end(), {float(2 * i), float(2 * i + 1)});
      else
        full.labels.push_back(static_cast<std::int32_t>(i % 7));
    }
    data::Dataset train, val, moved_train, moved_val;
    data::split_validation(full, 300, 42, train, val);
    data::split_validation(data::Dataset(full), 300, 42, moved_train, moved_val);
    BOOST_TEST((train.n == 700 && val.n == 300 && moved_train.n == 700 && moved_val.n == 300));
    BOOST_TEST(moved_train.x == train.x);
    BOOST_TEST(moved_val.x == val.x);
    BOOST_TEST((moved_train.labels == train.labels && moved_train.targets == train.targets));
    std::vector<int> seen(1000, 0);
    for (const data::Dataset* d : {&moved_train, &moved_val}) {
      for (std::int64_t r = 0; r < d->n; ++r) {
        const auto i = static_cast<std::int64_t>(d->row(r)[0]);
        ++seen[static_cast<std::size_t>(i)];
        BOOST_TEST((r == 0 || d->row(r - 1)[0] < d->row(r)[0]));  // in order
        BOOST_TEST(d->row(r)[2] == float(i) + 0.5f);
        if (regression) BOOST_TEST(d->targets[2 * r + 1] == float(2 * i + 1));
        if (!regression) BOOST_TEST(d->labels[r] == i % 7);
      }
    }
    BOOST_TEST(std::count(seen.begin(), seen.end(), 1) == 1000);
  }
}

BOOST_AUTO_TEST_CASE(normalisation_is_per_channel_for_images) {
  data::Dataset d;
  d.n = 2, d.dim = 4, d.shape = {2, 1, 2};
  d.x = {0, 2, 10, 10, 2, 0, 30, 30};  // channel 0: {0, 2, 2, 0}, channel 1: {10, 10, 30, 30}
  auto norm = data::fit_normalization(d);
  BOOST_TEST(norm.mean.size() == 2u);
  BOOST_TEST(norm.mean[0] == 1.0f);
  BOOST_TEST(norm.mean[1] == 20.0f);
  BOOST_TEST(norm.std[0] == 1.0f);
  BOOST_TEST(norm.std[1] == 10.0f);
  data::apply_normalization(d, norm);
  BOOST_TEST(d.x[0] == -1.0f);
  BOOST_TEST(d.x[6] == 1.0f);
}

BOOST_AUTO_TEST_CASE(augmentation_flips_and_crops_reproducibly_and_is_off_by_default) {
  const std::vector<std::int64_t> shape = {1, 2, 3};
  std::vector<float> x(4 * 6);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 6 + 1);
  std::vector<float> scratch, y = x;
  data::augment_batch(y.data(), 4, shape, {}, 0, scratch);
  BOOST_TEST(y == x);
  data::AugmentOptions flip{.flip = true, .seed = 3};
  data::augment_batch(y.data(), 4, shape, flip, 7, scratch);
  int flipped = 0;
  for (int n = 0; n < 4; ++n) {
    const float* img = y.data() + n * 6;
    const bool same = img[0] == 1 && img[2] == 3,
               mirrored = img[0] == 3 && img[2] == 1 && img[3] == 6;
    BOOST_TEST((same || mirrored));
    flipped += mirrored;
  }
  auto again = x;
  data::augment_batch(again.data(), 4, shape, flip, 7, scratch);
  BOOST_TEST(again == y);  // same stream, same result
  // Crops shift the image inside zero padding: every value is 0 or an original pixel value.
  auto crop = x;
  data::augment_batch(crop.data(), 4, shape, {.crop_padding = 1, .seed = 1}, 0, scratch);
  for (float v : crop) BOOST_TEST((v == 0.0f || (v >= 1.0f && v <= 6.0f)));
}

BOOST_AUTO_TEST_SUITE_END()
