// A C++ run of noise::NoiseScaleTracker for tests/python/test_gradient_noise.py: reads
// "b_small b_big g_small_sq g_big_sq" lines from stdin, feeds two_batch_estimate into a
// tracker (argv: ema window) and prints each estimate's B_simple and interval at the end, so
// the Python module can be compared with the C++ library run on its own, bit for bit.
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "noise/gradient_noise.hpp"

namespace {

void print(const char* name, const lbt::noise::NoiseScale& s) {
  std::printf("%s %.17g %.17g %.17g %.17g %.17g\n", name, s.G_sq, s.trace_sigma, s.b_simple,
              s.ci_low, s.ci_high);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: noise_tracker_cli EMA WINDOW < lines of 'b B g_small_sq g_big_sq'\n";
    return 2;
  }
  lbt::noise::NoiseScaleTracker tracker(std::atof(argv[1]),
                                        static_cast<std::size_t>(std::atoi(argv[2])));
  double b, B, g_small_sq, g_big_sq;
  while (std::cin >> b >> B >> g_small_sq >> g_big_sq) {
    tracker.add(lbt::noise::two_batch_estimate(b, g_small_sq, B, g_big_sq));
  }
  print("averaged", tracker.averaged());
  print("now", tracker.now());
  return 0;
}
