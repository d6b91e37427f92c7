// The CSV files a sweep writes (sweep.csv, best.csv) read back, by lbt fit, lbt plan and the
// sweep itself. A person may have edited them, or cut them short while copying; the rules a
// file is accepted by are stated here, and anything else is a DataError (exit 3) naming the
// file, its line and the fix, never a silent fallback.
//   - RFC 4180: a header row of column names; quoted fields may hold commas, quotes, newlines.
//   - Every line ends in a newline, the last one too (lbt writes them so, as do editors and
//     pandas): a file that ends mid-line or inside a quote was cut short.
//   - Every row has the header's field count; a column a reader needs is present (require).
//   - A number is a whole decimal number, empty meaning "not measured" where a reader says so;
//     a count (a batch size, a step) a whole number no smaller than its least value (steps_hi
//     and steps_to_target 1: a target is met after a step), a bracket's steps_lo below its
//     steps_hi, an LR positive: a number no sweep writes is an edit, refused like text.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace lbt::experiments {

struct CsvTable {
  std::filesystem::path path;  // for messages
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<int> lines;  // each row's line number in the file (1: the header)

  int column(const std::string& name) const;  // -1 when absent
  // The columns' indices, in order; DataError naming the file and every missing one.
  std::vector<int> require(const std::vector<std::string>& names) const;
  // rows[row][col] as a number; DataError naming file, line, column and text where it is not.
  double number(std::size_t row, int col) const;
  // The same for a quantity that must be > 0 (a batch size's LR).
  double positive(std::size_t row, int col) const;
  // The same for a count (a batch size, a step): a whole number >= `min`, exact in a double.
  std::int64_t whole(std::size_t row, int col, std::int64_t min) const;
  // DataError naming the file, the row's line and `what` is wrong there, with the rebuild hint.
  [[noreturn]] void reject(std::size_t row, const std::string& what) const;
};

// Reads and checks `path` by the rules above (DataError where it breaks one).
CsvTable read_csv(const std::filesystem::path& path);

// The hint of the errors above: how to rebuild a sweep's CSVs from its trials.
std::string rebuild_csv_hint(const std::filesystem::path& csv);

}  // namespace lbt::experiments
