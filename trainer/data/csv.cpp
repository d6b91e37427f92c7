// CSV reader; see csv.hpp. Numbers are parsed with strtod; empty fields are errors.
#include "trainer/data/csv.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "core/error.hpp"

namespace lbt::data {
namespace {

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  for (char ch : line) {
    if (ch == ',') out.push_back(field), field.clear();
    else if (ch != '\r') field += ch;
  }
  out.push_back(field);
  return out;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\""), e = s.find_last_not_of(" \t\"");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

bool parse_number(const std::string& field, double& v) {
  const std::string t = trim(field);
  if (t.empty()) return false;
  char* end = nullptr;
  v = std::strtod(t.c_str(), &end);
  return end == t.c_str() + t.size() && std::isfinite(v);
}

}  // namespace

Dataset load_csv(const std::filesystem::path& path, const CsvOptions& options, const std::string& name) {
  std::ifstream in(path);
  if (!in) {
    throw DataError("data file not found or unreadable: " + path.string(),
                    "set data.train_features (and data.test_features) to CSV files");
  }
  const std::string where = path.string() + ":";
  std::string line;
  std::int64_t line_no = 0, columns = -1, label_index = -1;
  std::vector<std::string> header;
  Dataset d;
  d.name = name;
  std::int64_t max_label = 0;
  bool label_is_index = !options.label_column.empty() &&
                        options.label_column.find_first_not_of("0123456789") == std::string::npos;
  while (std::getline(in, line)) {
    ++line_no;
    if (trim(line).empty()) continue;
    auto fields = split(line);
    if (columns < 0) {
      columns = static_cast<std::int64_t>(fields.size());
      bool numeric = true;
      double tmp;
      for (const auto& f : fields) numeric = numeric && parse_number(f, tmp);
      const bool is_header = options.header == "true" || (options.header == "auto" && !numeric);
      if (is_header) for (const auto& f : fields) header.push_back(trim(f));
      if (label_is_index) {
        label_index = std::stoll(options.label_column);
      } else {
        for (std::size_t i = 0; i < header.size(); ++i) if (header[i] == options.label_column) label_index = static_cast<std::int64_t>(i);
        if (label_index < 0) {
          throw DataError(where + std::to_string(line_no) + ": no column named '" + options.label_column + "'" +
                              (header.empty() ? " (the file has no header line)" : ""),
                          "set data.label_column to a header name or a 0-based column index");
        }
      }
      if (label_index >= columns) {
        throw DataError(where + std::to_string(line_no) + ": data.label_column " + std::to_string(label_index) +
                            " is past the last column (" + std::to_string(columns) + " columns)",
                        "column indices are 0-based");
      }
      if (columns < 2) throw DataError(where + std::to_string(line_no) + ": need a label and at least one feature column");
      d.dim = columns - 1;
      if (is_header) continue;
    }
    if (static_cast<std::int64_t>(fields.size()) != columns) {
      throw DataError(where + std::to_string(line_no) + ": expected " + std::to_string(columns) +
                          " fields, got " + std::to_string(fields.size()),
                      "every row needs the same number of comma-separated fields; fill missing values");
    }
    for (std::int64_t c = 0; c < columns; ++c) {
      double v;
      if (!parse_number(fields[c], v)) {
        throw DataError(where + std::to_string(line_no) + ": field " + std::to_string(c + 1) + " ('" +
                            trim(fields[c]) + "') is not a number",
                        "features and labels must be numbers; a header is allowed only on line 1");
      }
      if (c == label_index) {
        if (v < 0 || v != std::floor(v) || v > 1e9) {
          throw DataError(where + std::to_string(line_no) + ": label " + trim(fields[c]) +
                              " is not a non-negative integer", "labels are class indices 0..classes-1");
        }
        d.labels.push_back(static_cast<std::int32_t>(v));
        max_label = std::max<std::int64_t>(max_label, d.labels.back());
      } else {
        d.x.push_back(static_cast<float>(v));
      }
    }
    ++d.n;
  }
  if (d.n == 0) throw DataError(path.string() + ": no data rows", "the file is empty or holds only a header");
  d.shape = options.image_shape.empty() ? std::vector<std::int64_t>{d.dim} : options.image_shape;
  std::int64_t prod = 1;
  for (auto s : d.shape) prod *= s;
  if (prod != d.dim) {
    throw DataError(path.string() + ": data.image_shape holds " + std::to_string(prod) +
                        " values but each row has " + std::to_string(d.dim) + " features",
                    "make data.image_shape's product equal the number of feature columns");
  }
  d.num_classes = options.num_classes > 0 ? options.num_classes : max_label + 1;
  if (max_label >= d.num_classes) {
    throw DataError(path.string() + ": label " + std::to_string(max_label) + " is not < data.num_classes = " +
                        std::to_string(d.num_classes), "raise data.num_classes or fix the labels");
  }
  return d;
}

}  // namespace lbt::data
