// CSV reader: one example per line, comma-separated numbers. Classification: one column holds
// the integer class label (data.label_column). Regression: data.target_columns name the float
// target columns (in that order: targets [n, k]). Columns are chosen by header name or 0-based
// index; the rest are the features in file order. A header line is optional ("auto": a first line
// with any non-number is a header). Errors name the file and 1-based line.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "trainer/data/dataset.hpp"

namespace lbt::data {

struct CsvOptions {
  std::string label_column = "label";       // header name, or a 0-based index such as "0"
  std::vector<std::string> target_columns;  // non-empty: regression on these columns
  std::string header = "auto";              // auto | true | false
  std::vector<std::int64_t> image_shape;    // per-example shape; {} -> {features}
  std::int64_t num_classes = 0;             // 0: max label + 1
};

Dataset load_csv(const std::filesystem::path& path, const CsvOptions& options,
                 const std::string& name);

}  // namespace lbt::data
