// Termination signals (SIGTERM, SIGINT) end a rank with one line on stderr,
// "cmpi-train: rank 2/4: stopped by SIGTERM", and exit code 128 + signal.
// Without it a rank stopped by a signal vanishes silently: OpenMPI's mpirun,
// on SIGTERM or SIGINT (Ctrl-C), terminates every rank and exits 1 without
// a word, so the user cannot tell a stopped job from a crashed one.
//
// The handler only calls write(2) and _exit(2), both async-signal-safe, so it
// is correct whatever the rank was doing (inside MPI, LibTorch or malloc).
#pragma once

#include <string>

namespace cmpi::comm {

// Installs the handlers for this process. Call once, after MPI_Init (which
// may install handlers of its own), with this rank's place in the world.
void report_termination_signals(const std::string& program, int rank, int size);

}  // namespace cmpi::comm
