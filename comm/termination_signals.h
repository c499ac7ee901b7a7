// Termination signals (SIGTERM, SIGINT) end a rank with one line on stderr,
// "cmpi-train: rank 2/4: stopped by SIGTERM"; the rank then dies of the
// signal as it would have without the handler (status: killed by SIGTERM).
// Without it a rank stopped by a signal vanishes silently: OpenMPI's mpirun,
// on SIGTERM or SIGINT (Ctrl-C), terminates every rank and exits 1 without
// a word, so the user cannot tell a stopped job from a crashed one. (mpirun
// passes both signals on to the ranks as SIGTERM; a terminal's Ctrl-C reaches
// mpirun only, OpenMPI giving each rank a process group of its own.)
//
// Once the job is known to be failing (a config error every rank agreed on,
// or another rank's abort announced by the watchdog), a termination signal
// ends the rank quietly with the job's exit code instead: it is mpirun
// cleaning up after the rank that already said why the job failed, and a
// "stopped by SIGTERM" line per rank would read as a second failure.
//
// A rank that was frozen (SIGSTOP, or not scheduled) until the signal came
// dies of it without the line as well: a frozen rank is the one the others'
// watchdog named, and mpirun's SIGCONT + SIGTERM that resumes it is the
// clean-up after that report, delivered before the rank could hear of it.
// Frozen means that note_alive() (called by the watchdog's thread at every
// tick) has not run for 1.5 s, or found such a gap within the last 1.5 s (it
// may run first once resumed); without a watchdog, never.
//
// The handler only calls write(2), sigaction(2), raise(3), _exit(2) and
// clock_gettime(2), all
// async-signal-safe, so it is correct whatever the rank was doing (inside
// MPI, LibTorch or malloc).
#pragma once

#include <string>

namespace cmpi::comm {

// Installs the handlers for this process. Call once, after MPI_Init (which
// may install handlers of its own), with this rank's place in the world.
void report_termination_signals(const std::string& program, int rank, int size);

// From now on a termination signal ends this process silently with
// `exit_code` (> 0): the job is failing and its error has been reported.
// Async-signal-safe; callable from any thread.
void expect_termination(int exit_code);

// This process's threads are running (not frozen). Async-signal-safe;
// callable from any thread.
void note_alive();

}  // namespace cmpi::comm
