// Checkpoint cost: writing a checkpoint of N parameters with AdamW state (params, m, v: 12N
// bytes, CRC-32, fsync, rename) vs writing the same bytes with plain write(2) + fsync, in one
// run. Prints median and min-max seconds of each and their ratio.
//   usage: bench_checkpoint_write [params (default 25000000)] [reps (default 5)] [dir]
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "bench/harness.hpp"
#include "trainer/checkpoint.hpp"

using lbt::bench::Clock;

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 25000000;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::filesystem::path dir =
      argc > 3 ? argv[3] : std::filesystem::temp_directory_path() / "lbt_bench_ckpt";
  std::filesystem::create_directories(dir);
  std::vector<float> params(n, 0.5f), m(n, 0.25f), v(n, 0.125f);
  const std::vector<lbt::trainer::CheckpointSection> sections = {
      {"params", std::as_bytes(std::span<const float>(params))},
      {"optim/m", std::as_bytes(std::span<const float>(m))},
      {"optim/v", std::as_bytes(std::span<const float>(v))}};
  auto plain_write = [&](const std::filesystem::path& path) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (const auto& s : sections) {
      const char* p = reinterpret_cast<const char*>(s.bytes.data());
      std::size_t left = s.bytes.size();
      while (left > 0) {
        ssize_t w = ::write(fd, p, left);
        if (w <= 0) std::abort();
        p += w, left -= static_cast<std::size_t>(w);
      }
    }
    ::fsync(fd);
    ::close(fd);
  };
  std::vector<double> ckpt, plain;
  for (int r = 0; r < reps + 1; ++r) {  // the first round warms the page cache and is dropped
    auto t0 = Clock::now();
    plain_write(dir / "plain.bin");
    auto t1 = Clock::now();
    lbt::trainer::write_checkpoint(dir / "step.ckpt", {{"step", r}}, sections);
    auto t2 = Clock::now();
    if (r == 0) continue;
    plain.push_back(std::chrono::duration<double>(t1 - t0).count());
    ckpt.push_back(std::chrono::duration<double>(t2 - t1).count());
  }
  const lbt::bench::Stats p = lbt::bench::stats_of(plain), c = lbt::bench::stats_of(ckpt);
  const double mb = 12.0 * n / 1e6;
  std::printf(
      "params,bytes_MB,plain_median_s,plain_min,plain_max,ckpt_median_s,ckpt_min,ckpt_max,ratio\n");
  std::printf("%zu,%.0f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.2f\n", n, mb, p.median, p.min, p.max,
              c.median, c.min, c.max, c.median / p.median);
  std::filesystem::remove_all(dir);
}
