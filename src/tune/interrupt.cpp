#include "tune/interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace dgt {

namespace {

// Lock-free atomics are async-signal-safe; nothing else is touched in the handler.
std::atomic<int> g_signal{0};
std::atomic<bool> g_stop{false};

void on_signal(int sig) {
  g_signal.store(sig);
  g_stop.store(true);
  static const char kMsg[] =
      "\ndgtune: stopping after the current trial (the DB stays consistent; run the same command again to "
      "resume). Press Ctrl-C again to stop at once.\n";
  ssize_t n = ::write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
  (void)n;
}

}  // namespace

void install_interrupt_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;  // the second signal takes the default action: the process ends at once
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool stop_requested() { return g_stop.load(); }

int stop_signal() { return g_signal.load(); }

void request_stop() { g_stop.store(true); }

}  // namespace dgt
