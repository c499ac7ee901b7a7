// Termination signals (SIGTERM, SIGINT) end a rank with one line on stderr,
// "cmpi-train: rank 2/4: stopped by SIGTERM"; the rank then dies of the
// signal as it would have without the handler (status: killed by SIGTERM).
// Without it a rank stopped by a signal vanishes silently: OpenMPI's mpirun,
// on SIGTERM or SIGINT (Ctrl-C), terminates every rank and exits 1 without
// a word, so the user cannot tell a stopped job from a crashed one. (mpirun
// passes both signals on to the ranks as SIGTERM; a terminal's Ctrl-C reaches
// mpirun only, OpenMPI giving each rank a process group of its own.)
//
// The handler only calls write(2), sigaction(2) and raise(3), all
// async-signal-safe, so it is correct whatever the rank was doing (inside
// MPI, LibTorch or malloc).
#pragma once

#include <string>

namespace cmpi::comm {

// Installs the handlers for this process. Call once, after MPI_Init (which
// may install handlers of its own), with this rank's place in the world.
void report_termination_signals(const std::string& program, int rank, int size);

}  // namespace cmpi::comm
