// CSV reader; see csv.hpp. Numbers are parsed with strtod; empty fields are errors.
#include "trainer/data/csv.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>

#include "core/error.hpp"

namespace lbt::data {
namespace {

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  for (char ch : line) {
    if (ch == ',')
      out.push_back(field), field.clear();
    else if (ch != '\r')
      field += ch;
  }
  out.push_back(field);
  return out;
}

std::string trim_field(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\""), e = s.find_last_not_of(" \t\"");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

bool parse_number(const std::string& field, double& v) {
  const std::string t = trim_field(field);
  if (t.empty()) return false;
  // strtod also reads C's hexadecimal ("0x10" as 16): a spreadsheet's cell never means that.
  if (t.find_first_of("xX") != std::string::npos) return false;
  char* end = nullptr;
  v = std::strtod(t.c_str(), &end);
  return end == t.c_str() + t.size() && std::isfinite(v);
}

bool is_index(const std::string& column) {
  return !column.empty() && column.find_first_not_of("0123456789") == std::string::npos;
}

// What each column of a row is: a feature, the class label, or target number `j`.
struct ColumnRoles {
  static constexpr std::int64_t kFeature = -1, kLabel = -2;
  std::vector<std::int64_t> role;  // [columns]
  std::vector<std::string> names;  // [columns] 'name' from the header, or the index
};

// Resolves data.label_column / data.target_columns (names or 0-based indices) against the
// first line; `where` is "file:line".
std::int64_t find_column(const std::string& column, const std::vector<std::string>& header,
                         std::int64_t columns, const std::string& where, const char* key) {
  std::int64_t index = -1;
  if (is_index(column)) {
    index = std::stoll(column);
  } else {
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] == column) index = static_cast<std::int64_t>(i);
    if (index < 0) {
      throw DataError(where + ": no column named '" + column + "'" +
                          (header.empty() ? " (the file has no header line)" : ""),
                      std::string("set ") + key + " to header names or 0-based column indices");
    }
  }
  if (index >= columns) {
    throw DataError(where + ": " + key + " " + std::to_string(index) +
                        " is past the last column (" + std::to_string(columns) + " columns)",
                    "column indices are 0-based");
  }
  return index;
}

ColumnRoles column_roles(const CsvOptions& options, const std::vector<std::string>& header,
                         std::int64_t columns, const std::string& where) {
  ColumnRoles r;
  r.role.assign(static_cast<std::size_t>(columns), ColumnRoles::kFeature);
  for (std::int64_t c = 0; c < columns; ++c)
    r.names.push_back(header.empty() ? std::to_string(c) : "'" + header[c] + "'");
  if (options.target_columns.empty()) {
    r.role[find_column(options.label_column, header, columns, where, "data.label_column")] =
        ColumnRoles::kLabel;
    return r;
  }
  std::int64_t j = 0;
  for (const std::string& column : options.target_columns) {
    const std::int64_t c = find_column(column, header, columns, where, "data.target_columns");
    if (r.role[c] != ColumnRoles::kFeature) {
      throw DataError(where + ": data.target_columns names column " + std::to_string(c) + " twice",
                      "list each target column once");
    }
    r.role[c] = j++;
  }
  if (j >= columns) {
    throw DataError(where + ": every column is a target; need at least one feature column",
                    "list only the target columns in data.target_columns");
  }
  return r;
}

// One data row into d (features, and the label or the targets).
void read_row(const std::vector<std::string>& fields, const ColumnRoles& roles,
              const std::string& where, Dataset& d, std::vector<float>& row_targets) {
  for (std::size_t c = 0; c < fields.size(); ++c) {
    double v;
    const std::int64_t role = roles.role[c];
    if (!parse_number(fields[c], v)) {
      const std::string text = trim_field(fields[c]);
      if (role < 0) {
        throw DataError(
            where + ": field " + std::to_string(c + 1) + " ('" + text + "') is not a number",
            "features and labels must be numbers; a header is allowed only on line 1");
      }
      throw DataError(where + ": target column " + roles.names[c] + " (field " +
                          std::to_string(c + 1) + ") is " +
                          (text.empty() ? std::string("empty") : "'" + text + "'") +
                          ", not a finite number",
                      "targets must be finite numbers: drop or impute that row");
    }
    // Stored as float32: 1e39 became inf there, and a run "diverged" or read a null loss.
    if (role != ColumnRoles::kLabel && std::fabs(v) > std::numeric_limits<float>::max()) {
      throw DataError(where + ": field " + std::to_string(c + 1) + " (" + trim_field(fields[c]) +
                          ") is beyond float32's range (+-3.4e38), in which lbt keeps the data",
                      "rescale that column, or drop the row");
    }
    if (role == ColumnRoles::kLabel) {
      if (v < 0 || v != std::floor(v) || v > 1e9) {
        throw DataError(
            where + ": label " + trim_field(fields[c]) + " is not a non-negative integer",
            "labels are class indices 0..classes-1; for real-valued targets set "
            "data.target_columns");
      }
      d.labels.push_back(static_cast<std::int32_t>(v));
    } else if (role >= 0) {
      row_targets[static_cast<std::size_t>(role)] = static_cast<float>(v);
    } else {
      d.x.push_back(static_cast<float>(v));
    }
  }
  d.targets.insert(d.targets.end(), row_targets.begin(), row_targets.end());
}

// Shape and classes once every row is in.
void finish(const std::filesystem::path& path, const CsvOptions& options, Dataset& d) {
  if (d.n == 0)
    throw DataError(path.string() + ": no data rows", "the file is empty or holds only a header");
  d.shape = options.image_shape.empty() ? std::vector<std::int64_t>{d.dim} : options.image_shape;
  std::int64_t prod = 1;
  for (auto s : d.shape) prod *= s;
  if (prod != d.dim) {
    throw DataError(path.string() + ": data.image_shape holds " + std::to_string(prod) +
                        " values but each row has " + std::to_string(d.dim) + " features",
                    "make data.image_shape's product equal the number of feature columns");
  }
  if (d.target_dim > 0) return;  // regression: no classes
  const std::int64_t max_label = *std::max_element(d.labels.begin(), d.labels.end());
  d.num_classes = options.num_classes > 0 ? options.num_classes : max_label + 1;
  if (max_label >= d.num_classes) {
    throw DataError(path.string() + ": label " + std::to_string(max_label) +
                        " is not < data.num_classes = " + std::to_string(d.num_classes),
                    "raise data.num_classes or fix the labels");
  }
}

}  // namespace

Dataset load_csv(const std::filesystem::path& path, const CsvOptions& options,
                 const std::string& name) {
  require_regular_file(path, "set data.train_features (and data.test_features) to CSV files");
  std::ifstream in(path);
  if (!in) {
    throw DataError("data file not found or unreadable: " + path.string(),
                    "set data.train_features (and data.test_features) to CSV files");
  }
  std::string line;
  std::int64_t line_no = 0, columns = -1;
  ColumnRoles roles;
  std::vector<float> row_targets;
  Dataset d;
  d.name = name;
  while (std::getline(in, line)) {
    ++line_no;
    // Excel's "CSV UTF-8" starts with a byte-order mark, which stuck to the first column's name
    // ("no column named 'label'" with label the first column, 2026-11-29 audit).
    if (line_no == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
    if (trim_field(line).empty()) continue;
    const std::string where = path.string() + ":" + std::to_string(line_no);
    auto fields = split(line);
    if (columns < 0) {
      columns = static_cast<std::int64_t>(fields.size());
      bool numeric = true;
      double tmp;
      for (const auto& f : fields) numeric = numeric && parse_number(f, tmp);
      const bool is_header = options.header == "true" || (options.header == "auto" && !numeric);
      std::vector<std::string> header;
      if (is_header)
        for (const auto& f : fields) header.push_back(trim_field(f));
      if (columns < 2) throw DataError(where + ": need a label and at least one feature column");
      roles = column_roles(options, header, columns, where);
      d.target_dim = static_cast<std::int64_t>(options.target_columns.size());
      row_targets.assign(static_cast<std::size_t>(d.target_dim), 0.0f);
      d.dim = columns - (d.target_dim > 0 ? d.target_dim : 1);
      if (is_header) continue;
    }
    if (static_cast<std::int64_t>(fields.size()) != columns) {
      throw DataError(
          where + ": expected " + std::to_string(columns) + " fields, got " +
              std::to_string(fields.size()),
          "every row needs the same number of comma-separated fields; fill missing values");
    }
    read_row(fields, roles, where, d, row_targets);
    ++d.n;
  }
  finish(path, options, d);
  return d;
}

}  // namespace lbt::data
