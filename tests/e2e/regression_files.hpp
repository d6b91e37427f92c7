// Test helpers for regression data: a tiny .npy writer (format 1.0, C order, little-endian),
// seeded linear-regression draws y = x W*^T + s eps with x ~ N(0, I), and a checkpoint's
// parameters. Independent of lbt's reader, so the readers are tested against it. And a linear
// regression config on such files.
#pragma once
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "trainer/checkpoint.hpp"

namespace lbt::test {

// descr: "<f4", "<f8" or "<i8"; values converted to that dtype.
inline void write_npy(const std::filesystem::path& path, const std::string& descr,
                      const std::vector<std::int64_t>& shape, const std::vector<double>& values) {
  std::string dims;
  for (std::size_t i = 0; i < shape.size(); ++i)
    dims += std::to_string(shape[i]) + (shape.size() == 1 || i + 1 < shape.size() ? "," : "");
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';  // numpy pads to 64 bytes
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const std::uint16_t len = static_cast<std::uint16_t>(header.size());
  out.put(static_cast<char>(len & 0xff)).put(static_cast<char>(len >> 8));
  out << header;
  for (double v : values) {
    if (descr == "<f4") {
      const float f = static_cast<float>(v);
      out.write(reinterpret_cast<const char*>(&f), 4);
    } else if (descr == "<f8") {
      out.write(reinterpret_cast<const char*>(&v), 8);
    } else {
      const std::int64_t i = static_cast<std::int64_t>(v);
      out.write(reinterpret_cast<const char*>(&i), 8);
    }
  }
}

struct RegressionDraw {
  std::vector<double> x, y, w_star;  // x [n, d], y [n, k], w_star [k, d]
  std::int64_t n = 0, d = 0, k = 0;
};

// x ~ N(0, I_d), W* ~ N(0, 1) entries, y = x W*^T + s eps (std::mt19937_64, seeded).
inline RegressionDraw draw_regression(std::int64_t n, std::int64_t d, std::int64_t k, double s,
                                      std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal;
  RegressionDraw r{{}, {}, {}, n, d, k};
  for (std::int64_t i = 0; i < k * d; ++i) r.w_star.push_back(normal(gen));
  for (std::int64_t i = 0; i < n * d; ++i) r.x.push_back(static_cast<float>(normal(gen)));
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < k; ++j) {
      double v = 0.0;
      for (std::int64_t c = 0; c < d; ++c) v += r.x[i * d + c] * r.w_star[j * d + c];
      r.y.push_back(static_cast<float>(v + s * normal(gen)));
    }
  }
  return r;
}

// Writes x.npy (float32 [n, d]) and y.npy (float32 [n] when k == 1, else [n, k]) into dir.
inline void write_regression(const std::filesystem::path& dir, const RegressionDraw& r) {
  std::filesystem::create_directories(dir);
  write_npy(dir / "x.npy", "<f4", {r.n, r.d}, r.x);
  write_npy(dir / "y.npy", "<f4",
            r.k == 1 ? std::vector<std::int64_t>{r.n} : std::vector<std::int64_t>{r.n, r.k}, r.y);
}

// A linear regression config on dir/x.npy, dir/y.npy; `extra` appends TOML lines.
inline std::string npy_toml(const std::filesystem::path& dir, const std::string& spec,
                            std::int64_t validation, std::int64_t batch, std::int64_t steps,
                            double lr, const std::string& extra = "") {
  std::ostringstream t;
  t << "[model]\nspec = \"" << spec << "\"\ninit = \"zero\"\n"
    << "[data]\ndataset = \"reg\"\nformat = \"npy\"\ntrain_features = \""
    << (dir / "x.npy").string() << "\"\ntrain_labels = \"" << (dir / "y.npy").string()
    << "\"\nvalidation_size = " << validation << "\nnormalize = false\n"
    << "[train]\nglobal_batch = " << batch << "\nsteps = " << steps << "\neval_every = " << steps
    << "\nlog_every = " << steps << "\nthreads = 1\nseed = 3\n"
    << "[optimizer]\nname = \"sgd\"\nlr = " << lr << "\nmomentum = 0.0\n"
    << extra;
  return t.str();
}

inline std::filesystem::path write_file(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
  return p;
}

// The final parameters a run saved, flat: the weight [out, in] at 0, the bias [out] last (the
// parameter store starts each segment on a 64-byte line, so padding may sit between them).
inline std::vector<float> final_params(const std::filesystem::path& run_dir) {
  const auto all = trainer::list_checkpoints(run_dir / "checkpoints");
  const auto ck = trainer::read_checkpoint(all.back());
  const auto& bytes = ck.sections.at("params");
  std::vector<float> p(bytes.size() / sizeof(float));
  std::memcpy(p.data(), bytes.data(), bytes.size());
  return p;
}

}  // namespace lbt::test
