// Stopping a sweep cleanly on SIGINT/SIGTERM: the handler only sets a flag; the sweep loop finishes the
// trial in progress (stored in its own transaction), stores the shape's progress and returns.
#pragma once

namespace dgt {

/// Exit code of a sweep stopped by SIGINT (128 + SIGINT, the shell convention; README "Commands").
inline constexpr int kInterruptedExitCode = 130;

/// Installs the SIGINT and SIGTERM handlers: the first signal asks the sweep to stop after the current trial
/// and prints one line saying so; the handler then resets itself, so a second Ctrl-C ends the process at
/// once (the DB stays consistent either way: every trial is its own transaction). Idempotent.
void install_interrupt_handler();

/// True once a stop was asked for (a signal, or request_stop()).
bool stop_requested();

/// The signal number that asked for the stop (0: none, or request_stop()).
int stop_signal();

/// Asks for a stop as the signal would (tests, and callers that stop a sweep for their own reasons).
void request_stop();

}  // namespace dgt
