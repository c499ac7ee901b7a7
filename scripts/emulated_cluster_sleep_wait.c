// Preloaded, with CMPI_CLUSTER_WAIT=sleep, into the ranks of an
// oversubscribed emulated cluster (more ranks than cores;
// scripts/emulated_cluster.sh run): sched_yield() sleeps 50 us instead.
//
// Why: a rank waiting for a message polls and, with mpi_yield_when_idle (and
// in the project's own wait loops), calls sched_yield() between polls. Under
// Linux's fair scheduler a yielding task stays runnable, so every waiting rank
// keeps competing for the cores with the ranks that compute, and each
// exchange between two time-shared ranks (a tp allreduce, a pp send) waits
// for the scheduler to come round to the partner: 8 ranks on 2 cores spent
// ~40 ms per 2-rank tp allreduce. A sleeping rank leaves the run queue, so the
// computing ranks get the cores and the sleeper is woken within ~0.1 ms.
// Measured with gpt-3m dp2 x tp2 x pp2 on 8 ranks, 2 cores, machine busy:
// over loopback 2758 -> 998 ms per step; on the emulated 200 Mbit/s links no
// clear change (1971, 2499 -> 2181, 2113 ms), so it is not the default
// (docs/planner.md).
#define _GNU_SOURCE
#include <sched.h>
#include <time.h>

int sched_yield(void) {
  const struct timespec pause = {0, 50000};
  nanosleep(&pause, 0);
  return 0;
}
