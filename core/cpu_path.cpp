// Choosing the kernels' CPU path before main; see cpu_path.hpp. This file is compiled for the
// baseline x86-64 even in LBT_NATIVE builds (core/CMakeLists.txt): it must run, and say what
// is missing, on the CPU that lacks what the rest of the program was compiled for.
#include "core/cpu_path.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace lbt {
namespace detail {
CpuPath g_cpu_path = CpuPath::kGeneric;
}

namespace {

bool forced = false;

#if defined(__x86_64__)
// The features a path or a build may need; __builtin_cpu_supports takes only literals.
struct Feature {
  const char* name;
  bool (*present)();
};
#define LBT_FEATURE(f)                               \
  {                                                  \
    f, [] { return __builtin_cpu_supports(f) != 0; } \
  }
const Feature kFeatures[] = {
    LBT_FEATURE("sse4.2"),     LBT_FEATURE("avx"),       LBT_FEATURE("avx2"),
    LBT_FEATURE("fma"),        LBT_FEATURE("bmi"),       LBT_FEATURE("bmi2"),
    LBT_FEATURE("avx512f"),    LBT_FEATURE("avx512bw"),  LBT_FEATURE("avx512dq"),
    LBT_FEATURE("avx512vl"),   LBT_FEATURE("avx512cd"),  LBT_FEATURE("avx512vnni"),
    LBT_FEATURE("avx512bf16"), LBT_FEATURE("avx512vbmi")};
#undef LBT_FEATURE

bool has(const char* name) {
  for (const Feature& f : kFeatures)
    if (std::strcmp(f.name, name) == 0) return f.present();
  return false;
}

// What each path's kernels were compiled with (cmake/isa_sources.cmake), space-separated.
const char* needs(CpuPath path) {
  switch (path) {
    case CpuPath::kAvx512:
      return "avx512f avx512bw avx512dq avx512vl avx2 fma";
    case CpuPath::kAvx2:
      return "avx2 fma";
    default:
      return "";
  }
}

// The names in the space-separated `list` this CPU lacks, space-separated, into out (no
// std::string before main: in an LBT_NATIVE build its code may come from a -march=native
// translation unit, which is what this check must not run).
void missing(const char* list, char* out, std::size_t size) {
  out[0] = '\0';
  char name[32];
  std::size_t n = 0;
  for (const char* p = list;; ++p) {
    if (*p != ' ' && *p != '\0') {
      if (n + 1 < sizeof name) name[n++] = *p;
      continue;
    }
    name[n] = '\0';
    if (n > 0 && !has(name)) {
      if (out[0] != '\0') std::strncat(out, " ", size - std::strlen(out) - 1);
      std::strncat(out, name, size - std::strlen(out) - 1);
    }
    n = 0;
    if (*p == '\0') return;
  }
}
#else
void missing(const char*, char* out, std::size_t) {
  out[0] = '\0';
}
const char* needs(CpuPath) {
  return "";
}
#endif

bool runs(CpuPath path) {
#if defined(__x86_64__)
  char lacks[128];
  missing(needs(path), lacks, sizeof lacks);
  return lacks[0] == '\0';
#else
  return path == CpuPath::kGeneric;
#endif
}

// cpu_path_refusal(): a plain buffer, zero before any constructor runs (a std::string here could
// be initialised after choose_cpu_path, wiping it).
char refusal[512];

// Before main, so nothing can catch it: one line and exit code 2, as for a bad option.
// One error line and its hint, as every lbt error (cli/main.cpp), before main runs. Inside a
// Python process (`import lbt`; the interpreter's symbols are there) exiting killed the
// interpreter, a notebook's kernel with it: the refusal is kept for the module to raise, and
// the generic path, which every CPU runs, stands in until then.
void refuse(const char* hint, const char* a, const char* b = "", const char* c = "",
            const char* d = "") {
  if (::dlsym(RTLD_DEFAULT, "Py_IsInitialized")) {
    std::snprintf(refusal, sizeof refusal, "%s%s%s%s (%s)", a, b, c, d, hint);
    return;
  }
  std::fprintf(stderr, "error: %s%s%s%s\nhint: %s\n", a, b, c, d, hint);
  std::fflush(stderr);
  std::_Exit(2);
}

// An LBT_NATIVE build on a CPU without the features -march=native assumed would die of SIGILL
// somewhere later; LBT_BUILT_FOR lists them (core/CMakeLists.txt).
void check_build_baseline() {
#if defined(LBT_BUILT_FOR)
  char lacks[256];
  missing(LBT_BUILT_FOR, lacks, sizeof lacks);
  if (lacks[0] != '\0')
    refuse("rebuild with -DLBT_NATIVE=OFF, the portable default",
           "this lbt was compiled for CPUs with " LBT_BUILT_FOR
           " (LBT_NATIVE=ON) and this CPU lacks ",
           lacks);
#endif
}

CpuPath parse_forced(const char* value) {
  for (CpuPath p : {CpuPath::kGeneric, CpuPath::kAvx2, CpuPath::kAvx512}) {
    if (std::strcmp(value, cpu_path_name(p)) != 0) continue;
    char lacks[128];
    missing(needs(p), lacks, sizeof lacks);
    if (lacks[0] != '\0') {
      refuse("unset LBT_CPU (lbt runs the best path this CPU has), or force a path it can run",
             "LBT_CPU=", value, ": this CPU lacks ", lacks);
      return CpuPath::kGeneric;
    }
    return p;
  }
  refuse("LBT_CPU=avx512, avx2 or generic, or unset it", "LBT_CPU=", value, " is not a CPU path");
  return CpuPath::kGeneric;
}

__attribute__((constructor(101))) void choose_cpu_path() {
#if defined(__x86_64__)
  __builtin_cpu_init();  // constructors may run before libgcc's own
#endif
  check_build_baseline();
  const char* env = std::getenv("LBT_CPU");
  if (env && *env) {
    forced = true;
    detail::g_cpu_path = parse_forced(env);
    return;
  }
  for (CpuPath p : {CpuPath::kAvx512, CpuPath::kAvx2})
    if (runs(p)) {
      detail::g_cpu_path = p;
      return;
    }
}

}  // namespace

std::string cpu_path_refusal() {
  return refusal;
}

const char* cpu_path_name(CpuPath path) {
  switch (path) {
    case CpuPath::kAvx512:
      return "avx512";
    case CpuPath::kAvx2:
      return "avx2";
    default:
      return "generic";
  }
}

std::vector<CpuPath> available_cpu_paths() {
  std::vector<CpuPath> out;
  for (CpuPath p : {CpuPath::kGeneric, CpuPath::kAvx2, CpuPath::kAvx512})
    if (runs(p)) out.push_back(p);
  return out;
}

std::string cpu_path_report() {
  std::string detected;
#if defined(__x86_64__)
  for (const Feature& f : kFeatures)
    if (f.present()) detected += std::string(detected.empty() ? "" : " ") + f.name;
#else
  detected = "not an x86-64 CPU";
#endif
  std::string line = std::string("cpu path ") + cpu_path_name(cpu_path()) + " (";
  if (forced) line += std::string("forced by LBT_CPU=") + cpu_path_name(cpu_path()) + "; ";
  return line + "detected: " + (detected.empty() ? "none of the paths' features" : detected) + ")";
}

ScopedCpuPath::ScopedCpuPath(CpuPath path) : previous_(detail::g_cpu_path) {
  if (!runs(path))
    throw std::invalid_argument(std::string("ScopedCpuPath: this CPU cannot run path ") +
                                cpu_path_name(path));
  detail::g_cpu_path = path;
}

ScopedCpuPath::~ScopedCpuPath() {
  detail::g_cpu_path = previous_;
}

}  // namespace lbt
