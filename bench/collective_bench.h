// `cmpi-bench collective`: OSU-style latency of every collective the
// Communicator offers, plain MPI next to the Communicator's raw path and its
// compressed path with each codec asked for, side by side in one MPI job;
// per point the median latency, algorithm bandwidth, wire bytes, speedup over
// plain MPI, error, and how close the time comes to the link and codec
// bounds. Run it under mpirun (loopback or scripts/emulated_cluster.sh).
#pragma once

namespace cmpi::bench {

// argv[0] is "collective". Initializes and finalizes MPI itself. Returns 0
// on success, 2 on a bad option (printed by rank 0); an error during the run
// aborts the whole job with the message, so no rank is left waiting.
int run_collective_bench(int argc, char** argv);

}  // namespace cmpi::bench
