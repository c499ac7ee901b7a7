// Preloaded into the ranks of an oversubscribed emulated cluster (more ranks
// than cores; scripts/emulated_cluster.sh run, CMPI_CLUSTER_WAIT=backoff or
// sleep): a rank that has been waiting for a while sleeps instead of yielding.
//
// Why: a rank waiting for a message polls and, with mpi_yield_when_idle (and
// in the project's own wait loops), calls sched_yield() between polls. Under
// Linux's fair scheduler a yielding task stays runnable, so every waiting rank
// keeps competing for the cores with the ranks that compute, and each
// exchange between two time-shared ranks (a tp allreduce, a pp send) waits
// for the scheduler to come round to the partner. A sleeping rank leaves the
// run queue, so the computing ranks get the cores; but it is woken only by
// its timer (50 us asked, ~125 us with the kernel's timer slack), and a
// pipelined transfer that waits for each chunk and each protocol answer pays
// that every time: always sleeping made gpt-3m dp4 with zfp 10-29 % slower
// while it made the 8-rank dp2 x tp2 x pp2 layout ~10 % faster. (Cutting the
// timer slack to 1 us, ~68 us per sleep, measured no better: the sleepers
// then wake twice as often.) Numbers: docs/emulated_cluster.md.
//
// How: two-phase waiting. sched_yield() calls less than kStreakGapNs apart
// belong to one wait. For the first CMPI_CLUSTER_WAIT_YIELD_US microseconds
// of a wait (default 1000; 0 sleeps at once, CMPI_CLUSTER_WAIT=sleep) the
// call yields as before, so a message that comes soon is taken at once;
// after that each call sleeps 50 us, since a partner that has not answered
// in a millisecond is computing or off the cores, and the core is worth more
// to the ranks that compute than a quick wake-up is to this one.
//
// The state is per thread (a rank's comm thread waits on its own) and the
// setting is read on first use.
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { kStreakGapNs = 200000, kSleepNs = 50000 };

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static long long yield_phase_ns(void) {
  static long long phase = -1;  // racy first read is benign: same value
  if (phase < 0) {
    const char* text = getenv("CMPI_CLUSTER_WAIT_YIELD_US");
    long long us = text != 0 && *text != 0 ? atoll(text) : 1000;
    phase = us > 0 ? us * 1000 : 0;
  }
  return phase;
}

int sched_yield(void) {
  static __thread long long wait_start = 0, last_call = 0;
  long long now = now_ns();
  if (now - last_call > kStreakGapNs) wait_start = now;
  if (now - wait_start < yield_phase_ns()) {
    syscall(SYS_sched_yield);
  } else {
    const struct timespec pause = {0, kSleepNs};
    nanosleep(&pause, 0);
  }
  last_call = now_ns();
  return 0;
}
