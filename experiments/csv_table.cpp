// Reading a sweep's CSV files; see csv_table.hpp.
#include "experiments/csv_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/error.hpp"
#include "core/io.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
namespace {

// Splits RFC 4180 text into records, each with its first line's number.
struct Records {
  std::vector<std::vector<std::string>> fields;
  std::vector<int> lines;
  bool in_quote = false;  // ended inside a quoted field
};

Records split_records(const std::string& text) {
  Records r;
  std::vector<std::string> record;
  std::string field;
  int line = 1, record_line = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (r.in_quote) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"')
        field += '"', ++i;
      else if (c == '"')
        r.in_quote = false;
      else
        field += c, line += c == '\n';
    } else if (c == '"') {
      r.in_quote = true;
    } else if (c == ',') {
      record.push_back(std::move(field)), field.clear();
    } else if (c == '\n') {
      record.push_back(std::move(field)), field.clear();
      r.fields.push_back(std::move(record)), record.clear();
      r.lines.push_back(record_line);
      record_line = ++line;
    } else if (c != '\r') {
      field += c;
    }
  }
  return r;
}

int last_line(const std::string& text) {
  return 1 + static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

std::string rebuild_csv_hint(const fs::path& csv) {
  return "rebuild it from the trials: lbt sweep --config CONFIG --out " +
         csv.parent_path().string() + " --collect (CONFIG: the one sweep.json names)";
}

CsvTable read_csv(const fs::path& path) {
  std::string text = io::read_file(path);
  // A spreadsheet's UTF-8 byte-order mark stuck to the first column's name, which then went
  // unfound (sweep.csv's duplicate-trial check was skipped, 2026-11-29 audit).
  if (text.starts_with("\xEF\xBB\xBF")) text.erase(0, 3);
  if (text.empty()) throw DataError(path.string() + " is empty", rebuild_csv_hint(path));
  const Records records = split_records(text);
  if (records.in_quote || text.back() != '\n') {
    throw DataError(path.string() + " line " + std::to_string(last_line(text)) + " ends " +
                        (records.in_quote ? "inside a quoted field" : "without a newline") +
                        ": the file was cut short",
                    rebuild_csv_hint(path));
  }
  CsvTable table;
  table.path = path;
  table.header = records.fields.front();
  for (std::size_t i = 1; i < records.fields.size(); ++i) {
    if (records.fields[i].size() == 1 && records.fields[i][0].empty()) continue;  // blank line
    if (records.fields[i].size() != table.header.size()) {
      throw DataError(path.string() + " line " + std::to_string(records.lines[i]) + " has " +
                          std::to_string(records.fields[i].size()) + " fields, the header " +
                          std::to_string(table.header.size()),
                      rebuild_csv_hint(path));
    }
    table.rows.push_back(records.fields[i]);
    table.lines.push_back(records.lines[i]);
  }
  return table;
}

int CsvTable::column(const std::string& name) const {
  auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : static_cast<int>(it - header.begin());
}

std::vector<int> CsvTable::require(const std::vector<std::string>& names) const {
  std::vector<int> columns;
  std::string missing;
  for (const std::string& name : names) {
    columns.push_back(column(name));
    if (columns.back() < 0) missing += (missing.empty() ? "" : ", ") + name;
  }
  if (!missing.empty()) {
    throw DataError(path.string() + " lacks the column(s) " + missing +
                        " (its header, line 1, is cut short or was edited)",
                    rebuild_csv_hint(path));
  }
  return columns;
}

void CsvTable::reject(std::size_t row, const std::string& what) const {
  throw DataError(path.string() + " line " + std::to_string(lines.at(row)) + ", " + what,
                  rebuild_csv_hint(path));
}

double CsvTable::number(std::size_t row, int col) const {
  const std::string& text = rows.at(row).at(static_cast<std::size_t>(col));
  char* end = nullptr;
  const double value = text.empty() ? NAN : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) {
    reject(row, "column " + header[static_cast<std::size_t>(col)] + ": '" + text +
                    "' is not a finite number");
  }
  return value;
}

double CsvTable::positive(std::size_t row, int col) const {
  const double value = number(row, col);
  if (!(value > 0)) {
    reject(row, "column " + header[static_cast<std::size_t>(col)] + ": '" +
                    rows[row][static_cast<std::size_t>(col)] + "' is not positive");
  }
  return value;
}

std::int64_t CsvTable::whole(std::size_t row, int col, std::int64_t min) const {
  constexpr double kExact = 9007199254740992.0;  // 2^53: whole numbers a double holds exactly
  const double value = number(row, col);
  if (value != std::floor(value) || value < static_cast<double>(min) || value > kExact) {
    reject(row, "column " + header[static_cast<std::size_t>(col)] + ": '" +
                    rows[row][static_cast<std::size_t>(col)] +
                    "' is not a whole number >= " + std::to_string(min));
  }
  return static_cast<std::int64_t>(value);
}

}  // namespace lbt::experiments
