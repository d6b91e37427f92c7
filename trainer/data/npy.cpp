// .npy reader; see npy.hpp.
#include "trainer/data/npy.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "core/error.hpp"
#include "core/shortest_text.hpp"

namespace lbt::data {
namespace {

const char* kHint =
    "write the array with numpy.save(path, np.ascontiguousarray(a, dtype=np.float32))";

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

// The magic, version and header of a .npy file; `in` is left at the first data byte.
struct NpyHeader {
  std::string text;          // the header dict, e.g. {'descr': '<f4', ...}
  std::int64_t data_offset;  // where the data starts
};

NpyHeader read_header(std::ifstream& in, const std::filesystem::path& path,
                      std::int64_t file_size) {
  unsigned char pre[10] = {};
  in.read(reinterpret_cast<char*>(pre), 8);
  if (!in || std::memcmp(pre, "\x93NUMPY", 6) != 0) {
    throw DataError(path.string() + ": not a .npy file: expected the magic \\x93NUMPY at byte 0",
                    kHint);
  }
  const int major = pre[6];
  if (major < 1 || major > 3) {
    throw DataError(path.string() + ": unsupported .npy version " + std::to_string(major) + "." +
                        std::to_string(pre[7]) + " at byte 6, expected 1.0, 2.0 or 3.0",
                    kHint);
  }
  std::int64_t header_len = 0, offset = 10;
  if (major == 1) {
    in.read(reinterpret_cast<char*>(pre + 8), 2);
    header_len = pre[8] | (pre[9] << 8);
  } else {
    unsigned char b[4] = {};
    in.read(reinterpret_cast<char*>(b), 4);
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (std::int64_t(b[3]) << 24);
    offset = 12;
  }
  if (!in || header_len <= 0 || offset + header_len > file_size) {
    throw DataError(path.string() + ": truncated .npy header: expected " +
                        std::to_string(header_len) + " header bytes at offset " +
                        std::to_string(offset) + ", file has " + std::to_string(file_size) +
                        " bytes",
                    kHint);
  }
  std::string header(static_cast<std::size_t>(header_len), '\0');
  in.read(header.data(), header_len);
  return {std::move(header), offset + header_len};
}

// The header is a Python dict literal ({'descr': '<f4', 'fortran_order': False, 'shape': (3,
// 4), }), read by plain scans: std::regex recursed once per character there, and a crafted
// header of 400 kB of spaces overflowed the stack (2026-11-28).
std::size_t skip_spaces(const std::string& text, std::size_t at) {
  while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
  return at;
}

// Where the value of 'key' starts (after its colon and any spaces); npos where no such key.
std::size_t value_of(const std::string& header, const std::string& key) {
  const std::string quoted = "'" + key + "'";
  for (std::size_t at = header.find(quoted); at != std::string::npos;
       at = header.find(quoted, at + 1)) {
    const std::size_t colon = skip_spaces(header, at + quoted.size());
    if (colon < header.size() && header[colon] == ':') return skip_spaces(header, colon + 1);
  }
  return std::string::npos;
}

// The header as an error message quotes it: its first 200 characters.
std::string excerpt(const std::string& header) {
  return header.size() <= 200
             ? header
             : header.substr(0, 200) + "... (" + std::to_string(header.size()) + " bytes)";
}

// The text between `open` at `at` and the next `close`, or nothing.
std::optional<std::string> enclosed(const std::string& header, std::size_t at, char open,
                                    char close) {
  if (at >= header.size() || header[at] != open) return std::nullopt;
  const std::size_t end = header.find(close, at + 1);
  if (end == std::string::npos) return std::nullopt;
  return header.substr(at + 1, end - at - 1);
}

// The header's dtype into a.dtype; returns its item size in bytes. Fortran order is refused.
std::size_t read_dtype(const std::string& header, const std::filesystem::path& path, NpyLayout& a) {
  const auto quoted_descr = enclosed(header, value_of(header, "descr"), '\'', '\'');
  if (!quoted_descr)
    throw DataError(path.string() + ": .npy header has no 'descr': " + excerpt(header), kHint);
  const std::string& descr = *quoted_descr;
  std::size_t item = 0;
  if (descr == "<f4")
    a.dtype = "float32", item = 4;
  else if (descr == "<f8")
    a.dtype = "float64", item = 8;
  else if (descr == "|u1" || descr == "<u1")
    a.dtype = "uint8", item = 1;
  else if (descr == "<i8")
    a.dtype = "int64", item = 8;
  else {
    throw DataError(path.string() + ": unsupported .npy dtype '" + descr +
                        "', expected little-endian float32 ('<f4'), float64 ('<f8'), uint8 ('|u1') "
                        "or int64 ('<i8')",
                    "convert first, e.g. np.save(path, a.astype(np.float32))");
  }
  if (const std::size_t order = value_of(header, "fortran_order");
      order != std::string::npos && header.compare(order, 4, "True") == 0) {
    throw DataError(path.string() + ": .npy array is in Fortran order; lbt reads C order only",
                    "save np.ascontiguousarray(a) instead");
  }
  return item;
}

// The header's shape into a.shape; returns the element count and the data bytes it implies.
std::pair<std::int64_t, std::int64_t> read_shape(const std::string& header,
                                                 const std::filesystem::path& path,
                                                 std::size_t item, NpyLayout& a) {
  const auto shape = enclosed(header, value_of(header, "shape"), '(', ')');
  if (!shape)
    throw DataError(path.string() + ": .npy header has no 'shape': " + excerpt(header), kHint);
  std::int64_t count = 1;
  const std::string& dims = *shape;
  // A hostile header may give dimensions whose product overflows: refuse those by name rather
  // than let the size check wrap around (found by fuzz_npy).
  auto too_large = [&] {
    return DataError(
        path.string() + ": .npy header shape (" + dims + ") is too large to be a real array",
        "the file is damaged: write it again");
  };
  std::int64_t expected = static_cast<std::int64_t>(item);
  // Digits, commas and spaces only: a minus sign was skipped, and (-40, 4) read as (40, 4).
  if (dims.find_first_not_of("0123456789, ") != std::string::npos)
    throw DataError(
        path.string() + ": .npy header shape (" + dims + ") is not a tuple of whole numbers",
        "the file is damaged: write it again");
  for (std::size_t at = 0; at < dims.size();) {  // each run of digits is a dimension
    if (!std::isdigit(static_cast<unsigned char>(dims[at]))) {
      ++at;
      continue;
    }
    std::size_t end_of_run = at;
    while (end_of_run < dims.size() && std::isdigit(static_cast<unsigned char>(dims[end_of_run])))
      ++end_of_run;
    const std::string digits = dims.substr(at, end_of_run - at);
    at = end_of_run;
    std::int64_t dim = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), dim);
    if (ec != std::errc() || end != digits.data() + digits.size()) throw too_large();
    a.shape.push_back(dim);
    if (__builtin_mul_overflow(count, dim, &count) ||
        __builtin_mul_overflow(expected, dim, &expected)) {
      throw too_large();
    }
  }
  return {count, expected};
}

// A value that is not finite as the float32 it is trained as (NaN/Inf would poison every loss
// and gradient silently; a float64 1e300 passed as a double and became inf: a run "diverged"
// at step 0 with exit 0, 2026-11-29 audit), named by example index, which a user can look up.
DataError not_finite(const std::filesystem::path& path, const char* what, std::int64_t example,
                     double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return DataError(path.string() + ": " + what + " of example index " + std::to_string(example) +
                       " is " + text + ", not a finite number as a float32 (|x| < 3.4e38)",
                   "drop or impute that example, e.g. keep = np.isfinite(a).all(axis=1)");
}

// Each little-endian item of `dtype` in the next `count` of `in`, widened to double, handed to
// take(index, value); read 1 MiB at a time, the type looked at once per chunk, not per value.
template <class Take>
void for_each_value(std::ifstream& in, const std::string& dtype, std::size_t item,
                    std::int64_t count, Take&& take) {
  std::vector<unsigned char> chunk(std::size_t{1} << 20);  // a multiple of every item size
  const auto per_chunk = static_cast<std::int64_t>(chunk.size() / item);
  for (std::int64_t done = 0; done < count; done += per_chunk) {
    const std::int64_t n = std::min(per_chunk, count - done);
    in.read(reinterpret_cast<char*>(chunk.data()), static_cast<std::streamsize>(n * item));
    const auto each = [&](auto decode) {
      for (std::int64_t i = 0; i < n; ++i) take(done + i, decode(chunk.data() + i * item));
    };
    const auto read_as = [](auto zero) {
      return [](const unsigned char* p) {
        decltype(zero) v;
        std::memcpy(&v, p, sizeof v);
        return static_cast<double>(v);
      };
    };
    if (dtype == "float32")
      each(read_as(float{}));
    else if (dtype == "float64")
      each(read_as(double{}));
    else if (dtype == "uint8")
      each([](const unsigned char* p) { return static_cast<double>(*p); });
    else
      each(read_as(std::int64_t{}));
  }
}

// The array at `path`: its layout checked against the file's size, then each value converted
// to T through convert(index, value, shape).
template <class T, class Convert>
NpyArrayOf<T> read_values(const std::filesystem::path& path, Convert&& convert) {
  require_regular_file(
      path, "set data.train_features / data.train_labels (and the test_ keys) to .npy files");
  std::ifstream in(path, std::ios::binary);
  const auto file_size = static_cast<std::int64_t>(std::filesystem::file_size(path));
  const NpyHeader header = read_header(in, path, file_size);
  NpyArrayOf<T> a;
  const std::size_t item = read_dtype(header.text, path, a);
  const auto [count, expected] = read_shape(header.text, path, item, a);
  const std::int64_t data_offset = header.data_offset;
  if (file_size - data_offset != expected) {
    throw DataError(path.string() + ": header says shape " + shape_text(a.shape) + " of " +
                        a.dtype + " = " + std::to_string(expected) + " data bytes from offset " +
                        std::to_string(data_offset) + ", but the file has " +
                        std::to_string(file_size - data_offset),
                    "the file is truncated or damaged: write it again");
  }
  if constexpr (std::is_same_v<T, float>)
    reserve_untouched(a.values, static_cast<std::size_t>(count));  // unzeroed: written once
  else
    a.values.reserve(static_cast<std::size_t>(count));
  for_each_value(in, a.dtype, item, count,
                 [&](std::int64_t i, double v) { a.values.push_back(convert(i, v, a.shape)); });
  return a;
}

}  // namespace

NpyArray read_npy(const std::filesystem::path& path) {
  return read_values<double>(path, [](std::int64_t, double v, const auto&) { return v; });
}

NpyArrayOf<float> read_npy_features(const std::filesystem::path& path) {
  return read_values<float>(path, [&](std::int64_t i, double v, const auto& shape) {
    const auto f = static_cast<float>(v);
    if (std::isfinite(f)) return f;
    std::int64_t per = 1;
    for (std::size_t d = 1; d < shape.size(); ++d) per *= shape[d];
    throw not_finite(path, "a feature", i / per, v);
  });
}

namespace {

// The first value of `a` not finite as a float32 (not_finite).
void require_finite(const NpyArray& a, const std::filesystem::path& path, const char* what) {
  const std::int64_t n = a.shape.empty() ? 1 : a.shape[0];
  const std::size_t per = n > 0 ? a.values.size() / static_cast<std::size_t>(n) : 0;
  for (std::size_t i = 0; i < a.values.size(); ++i)
    if (!std::isfinite(static_cast<float>(a.values[i])))
      throw not_finite(path, what, static_cast<std::int64_t>(i / per), a.values[i]);
}

// Integer labels [n] (or [n, 1]) into d.labels / d.num_classes.
void read_class_labels(const NpyArray& fy, const std::filesystem::path& labels,
                       std::int64_t num_classes, Dataset& d) {
  d.labels.resize(static_cast<std::size_t>(d.n));
  std::int64_t max_label = 0, max_at = 0;
  for (std::int64_t i = 0; i < d.n; ++i) {
    const double v = fy.values[static_cast<std::size_t>(i)];
    if (v < 0 || v != std::floor(v) || v > 1e9) {
      throw DataError(labels.string() + ": label " + shortest_text(v) + " at index " +
                          std::to_string(i) + " is not a non-negative integer",
                      "labels are class indices 0..classes-1");
    }
    d.labels[i] = static_cast<std::int32_t>(v);
    if (d.labels[i] > max_label) max_label = d.labels[i], max_at = i;
  }
  d.num_classes = num_classes > 0 ? num_classes : max_label + 1;
  if (max_label >= d.num_classes) {
    throw DataError(labels.string() + ": label " + std::to_string(max_label) + " at index " +
                        std::to_string(max_at) +
                        " is not < data.num_classes = " + std::to_string(d.num_classes),
                    "raise data.num_classes or fix the labels");
  }
}

// Float targets [n] or [n, k] into d.targets / d.target_dim (a regression dataset).
void read_regression_targets(const NpyArray& fy, const std::filesystem::path& labels, Dataset& d) {
  require_finite(fy, labels, "the target");
  d.target_dim = fy.shape.size() == 2 ? fy.shape[1] : 1;
  d.targets.assign(fy.values.begin(), fy.values.end());
}

}  // namespace

Dataset load_npy_pair(const std::filesystem::path& features, const std::filesystem::path& labels,
                      const std::vector<std::int64_t>& image_shape, std::int64_t num_classes,
                      const std::string& name) {
  NpyArrayOf<float> fx = read_npy_features(features);
  const NpyArray fy = read_npy(labels);
  if (fx.shape.empty())
    throw DataError(features.string() + ": features must have shape (n, ...), got a scalar");
  if (fx.shape[0] == 0)
    throw DataError(features.string() + ": no examples: shape " + shape_text(fx.shape),
                    "the file holds an empty array");
  // Float labels are regression targets [n] or [n, k]; integer labels are class indices [n].
  const bool regression = fy.dtype == "float32" || fy.dtype == "float64";
  const bool column = fy.shape.size() == 2 && (fy.shape[1] == 1 || (regression && fy.shape[1] > 0));
  if (!(fy.shape.size() == 1 || column) || fy.shape[0] != fx.shape[0]) {
    throw DataError(labels.string() + ": labels have shape " + shape_text(fy.shape) + " but " +
                        features.string() + " has shape " + shape_text(fx.shape) +
                        ": expected labels of shape (" + std::to_string(fx.shape[0]) + ",)" +
                        (regression ? " or (" + std::to_string(fx.shape[0]) + ", k)" : ""),
                    "features and labels must hold the same examples in the same order");
  }
  Dataset d;
  d.name = name;
  d.n = fx.shape[0];
  d.shape.assign(fx.shape.begin() + 1, fx.shape.end());
  if (d.shape.empty()) d.shape = {1};
  d.dim = 1;
  for (auto s : d.shape) d.dim *= s;
  if (d.dim == 0)  // it reached the model check: "make the first layer size 0"
    throw DataError(
        features.string() + ": its examples have no features (shape " + shape_text(fx.shape) + ")",
        "write the features as an array of shape (n, features)");
  if (!image_shape.empty()) {
    std::int64_t prod = 1;
    for (auto s : image_shape) prod *= s;
    if (prod != d.dim) {
      throw DataError(features.string() + ": data.image_shape " + shape_text(image_shape) +
                          " holds " + std::to_string(prod) + " values but each example has " +
                          std::to_string(d.dim) + " (shape " + shape_text(d.shape) + ")",
                      "make data.image_shape's product match the features' trailing dimensions");
    }
    d.shape = image_shape;
  }
  d.x = std::move(fx.values);
  if (regression) {
    read_regression_targets(fy, labels, d);
  } else {
    read_class_labels(fy, labels, num_classes, d);
  }
  return d;
}

}  // namespace lbt::data
