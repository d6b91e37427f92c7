// SIGINT/SIGTERM handling; see interrupt.hpp. Only async-signal-safe calls in the handler.
#include "trainer/interrupt.hpp"

#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>

namespace lbt::trainer {
namespace {

std::atomic<int> g_signal{0};  // lock-free: safe in a handler, seen by every thread

std::atomic<void (*)(int)> g_handler{nullptr};
std::atomic<bool> g_signal_thread{false};

sigset_t interrupts() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

std::atomic<std::int64_t> g_first_ns{0};  // when the first signal came (CLOCK_MONOTONIC)

std::int64_t monotonic_ns() {  // clock_gettime is async-signal-safe
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

// A SIGTERM within this of the first is the same stop, not the second signal's "at once": in a
// SLURM job a sweep's trial gets the job's SIGTERM from SLURM and again from the sweep, which
// passes it on (it did not, and a SIGTERM the batch shell alone got, --signal=B:TERM@120, never
// reached the trials, which then died without a checkpoint: 2026-11-29 audit).
constexpr std::int64_t kSameStopNs = 2'000'000'000;

void on_signal(int sig) {
  if (g_signal != 0) {
    if (sig == SIGTERM && g_signal == SIGTERM && monotonic_ns() - g_first_ns < kSameStopNs) return;
    _exit(128 + sig);  // second signal: at once
  }
  g_first_ns = monotonic_ns();
  g_signal = sig;
  // Which signal: under mpirun a SIGTERM is often the job's abort after another rank's error,
  // not the user's stop (the line read the same either way, 2026-11-29 audit).
  const char msg_int[] =
      "\nlbt: SIGINT: stopping after this step (checkpoint, summary \"interrupted\"); signal "
      "again to exit at once\n";
  const char msg_term[] =
      "\nlbt: SIGTERM: stopping after this step (checkpoint, summary \"interrupted\"); signal "
      "again to exit at once\n";
  [[maybe_unused]] const ssize_t n = sig == SIGINT
                                         ? ::write(STDERR_FILENO, msg_int, sizeof msg_int - 1)
                                         : ::write(STDERR_FILENO, msg_term, sizeof msg_term - 1);
}

void on_check_signal(int sig) {
  const char msg[] = "\nlbt: --check stopped by a signal; nothing was written\n";
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
  _exit(128 + sig);
}

}  // namespace

void take_signals_on_their_own_thread() {
  const sigset_t set = interrupts();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      if (void (*handler)(int) = g_handler.load()) {
        handler(sig);
        continue;
      }
      // No handler yet: the default action, the process ends by the signal.
      signal(sig, SIG_DFL);
      pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
      raise(sig);
    }
  }).detach();
  g_signal_thread = true;
}

void unblock_interrupt_signals() {
  const sigset_t set = interrupts();
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
}

void install_signal_handler(void (*handler)(int)) {
  if (g_signal_thread) {
    g_handler = handler;
    return;
  }
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // file writes and reads go on; the loop polls the flag
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

void restore_default_interrupts() {
  install_signal_handler(SIG_DFL);
}

void install_interrupt_handlers() {
  install_signal_handler(on_signal);
}

void install_check_interrupt_handlers() {
  install_signal_handler(on_check_signal);
}

int interrupt_signal() {
  return g_signal;
}

const char* signal_name(int signal) {
  if (signal == SIGINT) return "SIGINT";
  if (signal == SIGTERM) return "SIGTERM";
  return "a signal";
}

}  // namespace lbt::trainer
