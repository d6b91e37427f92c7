// Reading and comparing run and sweep directories in end-to-end tests: every JSON / JSONL /
// CSV file must parse whole (no torn line), and a disturbed sweep's trials must equal an
// undisturbed one's bit for bit (training resumes bit-exactly, so every logged loss agrees).
#pragma once
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/sweep/sweep_results.hpp"

namespace lbt::test {

inline std::string file_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every line of a JSONL file; throws (naming the file and line) on a torn or unparsable one.
inline std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& p) {
  const std::string text = file_text(p);
  if (!text.empty() && text.back() != '\n')
    throw std::runtime_error(p.string() + ": torn last line");
  std::vector<nlohmann::json> lines;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      throw std::runtime_error(p.string() + ":" + std::to_string(n) + ": not a JSON object");
    lines.push_back(std::move(j));
  }
  return lines;
}

struct ParsedFiles {
  int json = 0, jsonl = 0, csv = 0, lines = 0;
  std::vector<std::string> errors;  // "path: why"
};

// Parses every .json, .jsonl and .csv file under `dir` (temp files of killed atomic writes,
// NAME.tmp.PID, are not files of the run and are skipped).
inline ParsedFiles parse_every_file(const std::filesystem::path& dir) {
  ParsedFiles r;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const std::filesystem::path& p = e.path();
    const std::string ext = p.extension();
    if (p.filename().string().find(".tmp.") != std::string::npos) continue;
    try {
      if (ext == ".json") {
        if (nlohmann::json::parse(file_text(p), nullptr, false).is_discarded())
          throw std::runtime_error("not JSON");
        ++r.json;
      } else if (ext == ".jsonl") {
        r.lines += static_cast<int>(read_jsonl(p).size());
        ++r.jsonl;
      } else if (ext == ".csv") {
        const auto t = experiments::read_csv(p);
        for (const auto& row : t.rows) {
          if (row.size() != t.header.size()) throw std::runtime_error("ragged row");
        }
        r.lines += static_cast<int>(t.rows.size());
        ++r.csv;
      }
    } catch (const std::exception& ex) {
      r.errors.push_back(p.string() + ": " + ex.what());
    }
  }
  return r;
}

// "" when the trial run `got` equals `want`: the same final status, steps and steps to target,
// and every eval.jsonl / metrics.jsonl line with the same step, losses and LR (bit for bit), each
// step logged once. Otherwise the first difference.
inline std::string compare_trials(const std::filesystem::path& want,
                                  const std::filesystem::path& got) {
  const auto a = nlohmann::json::parse(file_text(want / "summary.json"));
  const auto b = nlohmann::json::parse(file_text(got / "summary.json"));
  for (const char* key :
       {"status", "steps", "steps_to_target", "best_val_loss", "final_val_loss"}) {
    if (a.value(key, nlohmann::json()) != b.value(key, nlohmann::json()))
      return std::string("summary.json ") + key + ": " + a.value(key, nlohmann::json()).dump() +
             " vs " + b.value(key, nlohmann::json()).dump();
  }
  for (const char* file : {"eval.jsonl", "metrics.jsonl"}) {
    const auto x = read_jsonl(want / file), y = read_jsonl(got / file);
    if (x.size() != y.size())
      return std::string(file) + ": " + std::to_string(x.size()) + " vs " +
             std::to_string(y.size()) + " lines";
    for (std::size_t i = 0; i < x.size(); ++i) {
      for (const char* key : {"step", "val_loss", "loss", "lr", "grad_norm"}) {
        if (x[i].value(key, nlohmann::json()) != y[i].value(key, nlohmann::json()))
          return std::string(file) + " line " + std::to_string(i + 1) + " " + key + ": " +
                 x[i].value(key, nlohmann::json()).dump() + " vs " +
                 y[i].value(key, nlohmann::json()).dump();
      }
    }
  }
  return "";
}

}  // namespace lbt::test
