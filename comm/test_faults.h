// Test-only fault injection, so that the tests can make one rank of a real
// job misbehave in ways MPI never shows on one machine. Read from the
// environment variable CMPI_TEST_FAULT, unset in normal runs:
//   spin:R:N       world rank R busy-loops forever, outside any
//                  communication call, when its N-th watched call starts
//                  (a rank stuck in its own code: a deadlocked thread, a
//                  hung device); the other ranks wait for it.
//   block_sparse:sparse|dense
//                  every block-sparse calibration (comm/
//                  block_sparse_calibration.h) decides as if block-sparse
//                  were cheaper at every density (sparse) or at none
//                  (dense), without timing: two runs made to decide
//                  differently, as timings may.
//   stop:R:GROUP:N world rank R stops itself (SIGSTOP) inside its N-th
//                  communication call on the group named GROUP (dp, tp, pp,
//                  ...), once that call is armed: a rank frozen in the
//                  middle of a collective, the others waiting in it.
//   slowing:R:S:MS world rank R computes (s - S + 1) x MS milliseconds
//                  longer at the start of every training step s >= S
//                  (outside any call): a rank slowing down step by step, so
//                  that the others' waits grow (run.timeout: auto).
//   slow_save:R:MS world rank R takes MS milliseconds longer before each
//                  checkpoint save, while the others wait in the save's
//                  first collective.
//   auto_timing:MBIT
//                  preset auto (comm/adaptive_policy.h) times nothing: every
//                  time it would measure is computed from the bytes instead,
//                  as on a link of MBIT Mbit/s with codecs at 1 ns per byte
//                  and 10 ms of computation per step, the same on every rank
//                  and in every run: a run under auto made deterministic, so
//                  that a resumed run can be compared with it bit for bit.
//   lone_node:R    world rank R sees itself alone on its node where MPI
//                  (MPI_COMM_TYPE_SHARED) groups it with others: the ranks
//                  disagree on the node grouping, as on a cluster whose
//                  nodes report one host name.
// Anything else is an error (std::invalid_argument), so a typo in a test
// cannot pass for a fault that never happened.
#pragma once

#include <cstdint>
#include <string>

namespace cmpi::comm {

// What block_sparse:sparse|dense forces a calibration to decide.
enum class ForcedBlockSparse { kNone, kSparse, kDense };

struct TestFaults {
  int spin_rank = -1;  // -1: no rank spins
  uint64_t spin_at_call = 0;
  int lone_node_rank = -1;  // -1: every rank sees MPI's grouping
  int stop_rank = -1;       // -1: no rank stops itself
  std::string stop_group;
  uint64_t stop_at_call = 0;
  int slowing_rank = -1;  // -1: no rank slows down
  int64_t slowing_from_step = 0;
  uint64_t slowing_ms = 0;
  int slow_save_rank = -1;  // -1: no save is slowed
  uint64_t slow_save_ms = 0;
  ForcedBlockSparse block_sparse = ForcedBlockSparse::kNone;
  uint64_t auto_timing_mbit = 0;  // 0: preset auto measures real times

  static constexpr const char* kVariable = "CMPI_TEST_FAULT";
  static TestFaults parse(const std::string& text);
  // parse(getenv(kVariable)), or none when unset.
  static TestFaults from_environment();

  // Milliseconds world rank `rank` sleeps at the start of training step
  // `step` (slowing), or before a checkpoint save (slow_save).
  uint64_t step_delay_ms(int rank, int64_t step) const;
  uint64_t save_delay_ms(int rank) const;
};

}  // namespace cmpi::comm
