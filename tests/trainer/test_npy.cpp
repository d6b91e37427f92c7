// The .npy reader (trainer/data/npy.hpp) on files written here: every dtype in both header
// versions, features streamed into float32 over chunk boundaries, and every bad header, dtype,
// order and size by name.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "support/reader_files.hpp"
#include "trainer/data/npy.hpp"

using namespace lbt;
using namespace lbt::test;

BOOST_AUTO_TEST_SUITE(npy_reader)

BOOST_AUTO_TEST_CASE(npy_reads_float32_float64_uint8_int64_in_v1_and_v2_headers) {
  Dir dir;
  auto f32 = dir.write(
      "x32.npy",
      npy("<f4", "(3, 2, 2)", raw(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})));
  auto f64 = dir.write("x64.npy", npy("<f8", "(3, 4)", raw(std::vector<double>(12, 0.5)), 2));
  auto u8 = dir.write("xu8.npy", npy("|u1", "(3, 4)", std::string(12, '\7')));
  auto labels = dir.write("y.npy", npy("<i8", "(3,)", raw(std::vector<std::int64_t>{2, 0, 1})));
  auto d = data::load_npy_pair(f32, labels, {}, 0, "t");
  BOOST_TEST(d.n == 3);
  BOOST_TEST((d.shape == std::vector<std::int64_t>{2, 2}));
  BOOST_TEST(d.row(2)[3] == 11.0f);
  BOOST_TEST(d.num_classes == 3);
  BOOST_TEST(d.labels[0] == 2);
  auto d64 = data::load_npy_pair(f64, labels, {1, 2, 2}, 10, "t");
  BOOST_TEST((d64.shape == std::vector<std::int64_t>{1, 2, 2}));
  BOOST_TEST(d64.row(1)[1] == 0.5f);
  BOOST_TEST(d64.num_classes == 10);
  BOOST_TEST(data::read_npy(u8).values[5] == 7.0);
  BOOST_TEST(data::read_npy(u8).dtype == "uint8");
}

// Features are read 1 MiB at a time straight into float32 (the file's bytes and a double of each
// value beside them peaked at 4x the file): every dtype, over chunk boundaries, gives each value
// as static_cast<float> of the one written, and a NaN past the first chunk names its example.
BOOST_AUTO_TEST_CASE(npy_features_read_in_chunks_equal_every_value_written) {
  Dir dir;
  constexpr std::int64_t n = 100003, width = 3;  // 2.4 MB of float64: three chunks, the last short
  std::vector<double> f64(n * width);
  std::vector<std::int64_t> i64(f64.size());
  for (std::size_t i = 0; i < f64.size(); ++i)
    f64[i] = std::ldexp(static_cast<double>(i % 9973) - 4986.5, -7) / 3.0, i64[i] = i * 7919;
  const std::vector<float> f32(f64.begin(), f64.end());
  std::string u8(f64.size(), '\0');
  for (std::size_t i = 0; i < u8.size(); ++i) u8[i] = static_cast<char>(i * 31);
  const std::string shape = "(" + std::to_string(n) + ", " + std::to_string(width) + ")";
  const auto read = [&](const std::string& descr, const std::string& bytes) {
    return data::read_npy_features(dir.write("f.npy", npy(descr, shape, bytes))).values;
  };
  const std::vector<float> from64 = read("<f8", raw(f64)), from32 = read("<f4", raw(f32)),
                           fromu8 = read("|u1", u8), fromi64 = read("<i8", raw(i64));
  BOOST_REQUIRE(from64.size() == f64.size());
  BOOST_REQUIRE(from32.size() == f64.size() && fromu8.size() == f64.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < f64.size(); ++i) {
    differ += from64[i] != static_cast<float>(f64[i]) || from32[i] != f32[i];
    differ += fromu8[i] != static_cast<float>(static_cast<unsigned char>(u8[i]));
    differ += fromi64[i] != static_cast<float>(i64[i]);
  }
  BOOST_TEST(differ == 0u);
  std::vector<float> with_nan = f32;
  with_nan[3 * 90001 + 2] = std::nanf("");
  BOOST_TEST(has(data_error_of([&] { read("<f4", raw(with_nan)); }),
                 "f.npy: a feature of example index 90001 is nan"));
}

BOOST_AUTO_TEST_CASE(npy_bad_headers_dtypes_orders_sizes_and_label_shapes_are_data_errors) {
  Dir dir;
  const std::string twelve = raw(std::vector<float>(12, 1.0f));
  auto labels = dir.write("y.npy", npy("<i8", "(3,)", raw(std::vector<std::int64_t>{0, 1, 2})));
  auto not_npy = dir.write("a.npy", "PK\3\4 this is a zip");
  BOOST_TEST(has(data_error_of([&] { data::read_npy(not_npy); }), "magic"));
  auto version = dir.write("v.npy", "\x93NUMPY\x07\x00" + std::string(20, ' '));
  BOOST_TEST(has(data_error_of([&] { data::read_npy(version); }), "unsupported .npy version 7"));
  auto int32 = dir.write("i.npy", npy("<i4", "(3, 4)", twelve));
  BOOST_TEST(has(data_error_of([&] { data::read_npy(int32); }), "unsupported .npy dtype '<i4'"));
  auto big_endian = dir.write("b.npy", npy(">f4", "(3, 4)", twelve));
  BOOST_TEST(has(data_error_of([&] { data::read_npy(big_endian); }), "'>f4'"));
  auto fortran = dir.write("f.npy", npy("<f4", "(3, 4)", twelve, 1, "True"));
  BOOST_TEST(has(data_error_of([&] { data::read_npy(fortran); }), "Fortran order"));
  auto short_data = dir.write("s.npy", npy("<f4", "(3, 5)", twelve));
  auto msg = data_error_of([&] { data::read_npy(short_data); });
  BOOST_TEST(has(msg, short_data.string()));
  BOOST_TEST(has(msg, "(3, 5) of float32 = 60 data bytes"));
  BOOST_TEST(has(msg, "has 48"));
  // Dimensions whose product overflows 64 bits (fuzz_npy's first find), or that do not fit
  // one: a named error, not a wrapped-around size check.
  for (const char* shape : {"(4294967296, 4294967296)", "(3, 99999999999999999999)"}) {
    auto huge = dir.write("h.npy", npy("<f4", shape, twelve));
    BOOST_TEST(has(data_error_of([&] { data::read_npy(huge); }), "too large to be a real array"),
               shape);
  }
  auto four = dir.write("x4.npy", npy("<f4", "(4, 3)", twelve));
  msg = data_error_of([&] { data::load_npy_pair(four, labels, {}, 0, "t"); });
  BOOST_TEST(has(msg, "labels have shape (3,)"));
  BOOST_TEST(has(msg, "(4, 3)"));
  auto x = dir.write("x.npy", npy("<f4", "(3, 4)", twelve));
  msg = data_error_of([&] { data::load_npy_pair(x, labels, {1, 3, 3}, 0, "t"); });
  BOOST_TEST(has(msg, "data.image_shape (1, 3, 3) holds 9 values but each example has 4"));
  // float labels are regression targets; a non-integer integer-typed label cannot exist, but a
  // NaN target is named by its example index
  auto float_labels = dir.write("yf.npy", npy("<f4", "(3,)", raw(std::vector<float>{0, NAN, 2})));
  msg = data_error_of([&] { data::load_npy_pair(x, float_labels, {}, 0, "t"); });
  BOOST_TEST(has(msg, "yf.npy: the target of example index 1 is nan"));
}

// Headers that are long, spaced or ordered in unusual ways: numpy's parser accepts each, so lbt
// does; 400 kB of spaces in a version-2 header once overflowed the stack of std::regex
// (2026-11-28), and missing or unterminated values are named.
BOOST_AUTO_TEST_CASE(npy_headers_of_any_length_and_spacing_read_or_fail_by_name) {
  Dir dir;
  const std::string twelve = raw(std::vector<float>(12, 1.5f));
  const std::string spaces(400000, ' ');
  const auto header_file = [&](const std::string& name, const std::string& dict) {
    std::string padded = dict;
    while ((12 + padded.size() + 1) % 64 != 0) padded += ' ';
    padded += '\n';
    const auto len = static_cast<std::uint32_t>(padded.size());
    std::string out = "\x93NUMPY\x02";
    out += '\0';
    for (int shift = 0; shift < 32; shift += 8) out += static_cast<char>((len >> shift) & 0xff);
    return dir.write(name, out + padded + twelve);
  };
  for (const std::string& dict : std::vector<std::string>{
           "{'descr':" + spaces + "'<f4', 'fortran_order': False, 'shape': (3, 4), }",
           "{'descr': '<f4', 'fortran_order': False, 'shape': (" + spaces + "3," + spaces + "4), }",
           "{'shape': (3, 4), 'fortran_order' : False, 'descr' :\t'<f4'}"}) {
    const auto a = data::read_npy(header_file("ok.npy", dict));
    BOOST_TEST((a.shape == std::vector<std::int64_t>{3, 4}));
    BOOST_TEST(a.dtype == "float32");
    BOOST_TEST(a.values[11] == 1.5);
  }
  const auto fortran = header_file(
      "f.npy", "{'descr': '<f4', 'fortran_order':" + spaces + "True, 'shape': (3, 4), }");
  BOOST_TEST(has(data_error_of([&] { data::read_npy(fortran); }), "Fortran order"));
  const auto no_shape_end = header_file("s.npy", "{'descr': '<f4', 'shape': (3, 4" + spaces);
  const std::string no_shape = data_error_of([&] { data::read_npy(no_shape_end); });
  BOOST_TEST(has(no_shape, "has no 'shape'"));
  BOOST_TEST(no_shape.size() < 1000u);  // the header quoted in part
  const auto no_descr_end = header_file("d.npy", "{'shape': (3, 4), 'descr': '<f4" + spaces);
  BOOST_TEST(has(data_error_of([&] { data::read_npy(no_descr_end); }), "has no 'descr'"));
  const auto descr_as_key_only = header_file("k.npy", "{'descr', 'shape': (3, 4)}");
  BOOST_TEST(has(data_error_of([&] { data::read_npy(descr_as_key_only); }), "has no 'descr'"));
}

BOOST_AUTO_TEST_SUITE_END()
