// SIGINT handling for the ranks and the launcher.
#include "interrupt.h"

#include <signal.h>

#include <csignal>
#include <string>

#include "rendezvous.h"

namespace roce::bench {
namespace {

volatile std::sig_atomic_t g_interrupts = 0;
volatile std::sig_atomic_t g_second_kills = 0;

void on_sigint(int /*signal*/) {
  g_interrupts = g_interrupts + 1;
  if (g_second_kills != 0 && g_interrupts >= 2) {
    // Async-signal-safe: the default action for the process's next SIGINT, this one.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGINT, &dfl, nullptr);
    raise(SIGINT);
  }
}

void install(int flags) {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = flags;
  sigaction(SIGINT, &sa, nullptr);
}

}  // namespace

void install_interrupt_handler(bool second_kills) {
  g_second_kills = second_kills ? 1 : 0;
  install(SA_RESTART);
}

void install_launcher_interrupt_handler() {
  g_second_kills = 0;
  install(0);
}

int interrupt_count() {
  return static_cast<int>(g_interrupts);
}

bool interrupted_anywhere(Rendezvous& rendezvous) {
  bool any = false;
  for (const std::string& flag : rendezvous.allgather(interrupt_count() > 0 ? "1" : "0")) {
    any = any || flag == "1";
  }
  return any;
}

}  // namespace roce::bench
