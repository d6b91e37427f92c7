// SIGINT/SIGTERM handling; see interrupt.hpp. Only async-signal-safe calls in the handler.
#include "trainer/interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstring>

namespace lbt::trainer {
namespace {

volatile sig_atomic_t g_signal = 0;

void on_signal(int sig) {
  if (g_signal != 0) _exit(128 + sig);  // second signal: at once
  g_signal = sig;
  const char msg[] =
      "\nlbt: stopping after this step (checkpoint, summary \"interrupted\"); signal again to "
      "exit at once\n";
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
}

void on_check_signal(int sig) {
  const char msg[] = "\nlbt: --check stopped by a signal; nothing was written\n";
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
  _exit(128 + sig);
}

void install(void (*handler)(int)) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // file writes and reads go on; the loop polls the flag
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace

void install_interrupt_handlers() {
  install(on_signal);
}

void install_check_interrupt_handlers() {
  install(on_check_signal);
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
