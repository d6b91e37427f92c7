// An LD_PRELOAD library for tiny_steps_wake_no_thread.sh: counts the OpenMP parallel regions a
// process opens with more than one thread (GOMP_parallel: what lbt, OpenBLAS and oneDNN call,
// `nm -D --undefined-only`), passes each on to libgomp, and at exit writes the count to the file
// named by $LBT_FORK_COUNT_FILE.
#include <dlfcn.h>
#include <omp.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace {

using GompParallel = void (*)(void (*)(void*), void*, unsigned, unsigned);

std::atomic<unsigned long> teams_of_two_or_more{0};

struct WriteAtExit {
  ~WriteAtExit() {
    const char* path = std::getenv("LBT_FORK_COUNT_FILE");
    std::FILE* out = path ? std::fopen(path, "w") : nullptr;
    if (!out) return;
    std::fprintf(out, "%lu\n", teams_of_two_or_more.load());
    std::fclose(out);
  }
} write_at_exit;

}  // namespace

extern "C" void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags) {
  static const auto real = reinterpret_cast<GompParallel>(dlsym(RTLD_NEXT, "GOMP_parallel"));
  // 0 asks for the default team (the calling thread's nthreads-var); nested regions run alone.
  const int threads = num_threads ? static_cast<int>(num_threads) : omp_get_max_threads();
  if (threads > 1 && !omp_in_parallel()) teams_of_two_or_more.fetch_add(1);
  real(fn, data, num_threads, flags);
}
