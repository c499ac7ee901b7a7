// Pipeline schedules: the order in which one stage runs the forward and
// backward passes of a step's micro-batches. A schedule is a pure function of
// (stage, stages, micro-batches), so every rank derives its own list and the
// neighbours' lists agree on the order of every activation and gradient they
// exchange.
//
//   gpipe  all forwards 0..M-1, then all backwards 0..M-1. Simple; a stage
//          keeps the activations of all M micro-batches until its backwards.
//   1f1b   warm-up: min(P - s - 1, M) forwards; steady state: alternate one
//          forward and one backward; cool-down: the remaining backwards.
//          Backwards start as soon as the last stage can run them, so stage s
//          never holds more than P - s micro-batches in flight (PipeDream-
//          Flush / Megatron's non-interleaved schedule).
//
// Both run micro-batches in increasing order in each direction, so between
// two neighbouring stages the i-th activation sent is the i-th received, and
// likewise for gradients. With sends that do not wait for their receiver
// (nonblocking) and blocking receives, neither schedule can deadlock: each
// receive waits only on a send the peer issues earlier in its own list.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/config_enums.h"

namespace cmpi::parallel {

struct PipelineAction {
  enum class Kind { kForward, kBackward };
  Kind kind = Kind::kForward;
  int64_t micro_batch = 0;
  bool operator==(const PipelineAction& other) const {
    return kind == other.kind && micro_batch == other.micro_batch;
  }
};

class PipelineSchedule {
 public:
  virtual ~PipelineSchedule() = default;
  virtual std::string name() const = 0;
  // Every micro-batch's forward, then later its backward, each exactly once.
  // Throws std::invalid_argument for stages < 1, a stage outside [0, stages)
  // or micro_batches < 1.
  virtual std::vector<PipelineAction> actions(int64_t stage, int64_t stages,
                                              int64_t micro_batches) const = 0;
};

class GpipeSchedule final : public PipelineSchedule {
 public:
  std::string name() const override { return "gpipe"; }
  std::vector<PipelineAction> actions(int64_t stage, int64_t stages,
                                      int64_t micro_batches) const override;
};

class OneForwardOneBackwardSchedule final : public PipelineSchedule {
 public:
  std::string name() const override { return "1f1b"; }
  std::vector<PipelineAction> actions(int64_t stage, int64_t stages,
                                      int64_t micro_batches) const override;
};

// "gpipe" or "1f1b"; throws std::invalid_argument naming parallel.schedule
// and the known names otherwise.
std::unique_ptr<PipelineSchedule> make_pipeline_schedule(const std::string& name);
std::unique_ptr<PipelineSchedule> make_pipeline_schedule(config::PipelineSchedule schedule);

// The most micro-batches a stage holds at once (forwarded, not yet
// backwarded) under `actions`.
int64_t max_in_flight(const std::vector<PipelineAction>& actions);

}  // namespace cmpi::parallel
