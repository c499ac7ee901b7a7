// PipelineEngine: runs one training step's forward and backward passes of
// this rank's pipeline stage over M micro-batches, in the order a
// PipelineSchedule gives, exchanging activations and their gradients with
// the neighbouring stages through the pp group.
//
// Forward m: the first stage embeds micro-batch m; a later stage receives
// the previous stage's output (role activation, tag m; [micro_batch, T, H]
// for a GPT, [micro_batch, C, H, W] for a CNN, whose shape differs per stage)
// into a fresh leaf tensor that requires grad. The stage's blocks run; the
// last stage computes the loss, any other stage sends its output on.
// Backward m: the last stage back-propagates loss·scale; any other stage
// receives the gradient of its output (role activation_grad, tag m) and
// back-propagates it; every stage but the first sends its input's gradient
// back. Parameter gradients accumulate over the micro-batches as in the
// single-stage loop.
//
// Sends are nonblocking and receives block, so a stage never waits on a
// neighbour that is itself waiting to send (see pipeline_schedule.h). A send
// is released as soon as it is known complete: an output send when its
// gradient comes back, an input-gradient send in the stage's next action
// (after that action's receive), so a stage holds at most one gradient send
// beside its in-flight micro-batches, whatever the number of micro-batches.
// The step's loss (Σ_m loss_m · scale, computed on the last stage) is
// broadcast over the pp group (role other) so every stage reports it.
// run_forward is the evaluation pass: forwards only, in micro-batch order
// (no activations are kept for a backward), the loss broadcast the same way.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "parallel/pipeline/pipeline_schedule.h"

namespace cmpi::comm {
class Communicator;
}

namespace cmpi::parallel {

// What the engine asks of this stage's part of the model, per micro-batch.
// Only the functions of the stage's role need to be set: `embed` on the
// first stage, `loss` on the last, `run_blocks` everywhere.
struct PipelineStageWork {
  // Micro-batch m's first-stage input: embedded tokens [micro_batch, T, H]
  // (or images [micro_batch, C, H, W]).
  std::function<torch::Tensor(int64_t micro_batch)> embed;
  // This stage's layers: input shape -> output shape (the GPT's blocks keep
  // [micro_batch, T, H]).
  std::function<torch::Tensor(const torch::Tensor& hidden)> run_blocks;
  // Mean loss of micro-batch m from the last layer's output (a scalar).
  std::function<torch::Tensor(const torch::Tensor& hidden, int64_t micro_batch)> loss;
  // Optional: called once per step just before the stage's last backward
  // (the data-parallel optimizer's begin_last_micro_batch, so gradient
  // buckets start reducing while that backward runs).
  std::function<void()> before_last_backward;
  // Loss scaling (fp16): backward starts from loss · loss_scale ·
  // gradient_scale, while the returned loss sums loss · loss_scale.
  double gradient_scale = 1;
};

class PipelineEngine {
 public:
  // `pp` is this rank's pipeline group (its rank is the stage);
  // `activation_shape` the shape of what flows between stages,
  // [micro_batch, T, H] (float32). Throws std::invalid_argument for a null
  // schedule or a shape with a non-positive dimension.
  PipelineEngine(comm::Communicator& pp, std::unique_ptr<PipelineSchedule> schedule,
                 std::vector<int64_t> activation_shape);
  // Stages whose input and output differ (a CNN's): `input_shape` is what
  // this stage receives (or embeds, on the first stage) and the shape of the
  // gradient it sends back; `output_shape` what it sends on and the shape of
  // the gradient it receives (unused on the last stage).
  PipelineEngine(comm::Communicator& pp, std::unique_ptr<PipelineSchedule> schedule,
                 std::vector<int64_t> input_shape, std::vector<int64_t> output_shape);

  // What activations and their gradients travel as: float32 (the default),
  // or a 16-bit compute dtype (bfloat16, half), sent as 16-bit words. The
  // stage's tensors stay float32 on both sides; a model that sets a 16-bit
  // wire dtype promises they hold values of that dtype (the GPT widens its
  // 16-bit stage output and its first block rounds the input back, so the
  // input's gradient is a widened 16-bit one too), which makes the narrowing
  // for the wire exact. Throws std::invalid_argument for any other dtype.
  void set_wire_dtype(torch::ScalarType dtype);
  torch::ScalarType wire_dtype() const { return wire_dtype_; }
  // Where the stage's tensors live (the CPU by default): a received tensor
  // is handed to the stage there; a device's tensors travel through host
  // memory (parallel/host_staging.h).
  void set_device(const torch::Device& device) { device_ = device; }

  // Forward and backward of `micro_batches` micro-batches; returns
  // Σ_m loss_m · loss_scale from the last stage, on every stage. Collective
  // over pp. Throws std::logic_error when a function this stage needs is
  // missing or a shape is not the one given for it.
  double run_step(const PipelineStageWork& work, int64_t micro_batches, double loss_scale);

  // Forward only (evaluation, no gradients): micro-batches 0..M-1 in order,
  // each stage receiving, running its blocks and sending on; the last stage
  // sums loss_m · loss_scale, broadcast over pp so every stage returns it.
  // `before_last_backward` is not used. Collective over pp; call under
  // torch::NoGradGuard.
  double run_forward(const PipelineStageWork& work, int64_t micro_batches, double loss_scale);

  int stage() const { return stage_; }
  int stages() const { return stages_; }
  bool is_first() const { return stage_ == 0; }
  bool is_last() const { return stage_ + 1 == stages_; }
  const PipelineSchedule& schedule() const { return *schedule_; }
  // The most micro-batches whose activations this stage held at once during
  // the last step.
  int64_t peak_in_flight() const { return peak_in_flight_; }
  // The most bytes of input-gradient sends this stage held at once during
  // the last step (one micro-batch's input gradient at most).
  int64_t peak_held_send_bytes() const { return peak_held_send_bytes_; }

 private:
  struct Pending;

  torch::Tensor receive(int64_t micro_batch, int from, bool gradient);
  void send(const torch::Tensor& tensor, int64_t micro_batch, int to, bool gradient,
            Pending& pending);
  void check_shape(const torch::Tensor& tensor, const char* what, int64_t micro_batch,
                   const std::vector<int64_t>& shape) const;

  comm::Communicator& pp_;
  std::unique_ptr<PipelineSchedule> schedule_;
  std::vector<int64_t> input_shape_, output_shape_;
  torch::ScalarType wire_dtype_ = torch::kFloat;
  torch::Device device_ = torch::Device(torch::kCPU);
  int stage_ = 0;
  int stages_ = 1;
  int64_t peak_in_flight_ = 0;
  int64_t held_send_bytes_ = 0;
  int64_t peak_held_send_bytes_ = 0;
};

}  // namespace cmpi::parallel
