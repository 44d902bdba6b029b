// Ctrl-C. SIGINT only sets a flag; the ranks agree at each size boundary whether any of them was
// interrupted (interrupted_anywhere), stop together, and rank 0 writes what was measured, marked
// as interrupted; the exit status is then kExitInterrupted. The launcher forwards its SIGINT to
// the ranks it started (they also get the terminal's own: the flag does not mind) and, on a
// second one, kills them.
#pragma once

namespace roce::bench {

class Rendezvous;

// 128 + SIGINT, as a shell reports a command that Ctrl-C stopped.
inline constexpr int kExitInterrupted = 130;

// Installs the SIGINT handler (SA_RESTART: no call in the plugin or vroce sees EINTR). With
// `second_kills`, a second SIGINT takes the default action (the process dies), for a rank that
// no launcher of ours supervises; the launcher's ranks leave that to the launcher.
void install_interrupt_handler(bool second_kills);

// The launcher's handler: without SA_RESTART, so its waitpid() returns to look at the count.
void install_launcher_interrupt_handler();

// SIGINTs received so far.
int interrupt_count();

// Collective: true on every rank when any rank has been interrupted. One allgather.
bool interrupted_anywhere(Rendezvous& rendezvous);

}  // namespace roce::bench
