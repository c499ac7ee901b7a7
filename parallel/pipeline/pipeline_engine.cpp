#include "parallel/pipeline/pipeline_engine.h"

#include <stdexcept>
#include <string>

#include "comm/communicator.h"
#include "parallel/host_staging.h"
#include "parallel/tensor_words.h"

namespace cmpi::parallel {
namespace {

// Error-feedback keys of the pp traffic: one stream per direction.
constexpr uint64_t kActivationKey = 1;
constexpr uint64_t kActivationGradKey = 2;

int tag_of(int64_t micro_batch) {
  return int(micro_batch);
}

}  // namespace

// A nonblocking send and the tensor whose storage it reads.
struct PipelineEngine::Pending {
  comm::Communicator::Request request;
  torch::Tensor keep_alive;
};

PipelineEngine::PipelineEngine(comm::Communicator& pp, std::unique_ptr<PipelineSchedule> schedule,
                               std::vector<int64_t> activation_shape)
    : PipelineEngine(pp, std::move(schedule), activation_shape, activation_shape) {}

PipelineEngine::PipelineEngine(comm::Communicator& pp, std::unique_ptr<PipelineSchedule> schedule,
                               std::vector<int64_t> input_shape, std::vector<int64_t> output_shape)
    : pp_(pp),
      schedule_(std::move(schedule)),
      input_shape_(std::move(input_shape)),
      output_shape_(std::move(output_shape)),
      stage_(pp.rank()),
      stages_(pp.size()) {
  if (!schedule_) throw std::invalid_argument("pipeline engine: no schedule given");
  for (const auto* shape : {&input_shape_, &output_shape_}) {
    if (shape->empty()) throw std::invalid_argument("pipeline engine: empty activation shape");
    for (int64_t d : *shape)
      if (d <= 0)
        throw std::invalid_argument("pipeline engine: activation shape " +
                                    c10::str(c10::IntArrayRef(*shape)) +
                                    " has a non-positive dimension");
  }
}

void PipelineEngine::check_shape(const torch::Tensor& tensor, const char* what, int64_t micro_batch,
                                 const std::vector<int64_t>& shape) const {
  if (!tensor.defined() || tensor.sizes() != c10::IntArrayRef(shape) ||
      tensor.scalar_type() != torch::kFloat)
    throw std::logic_error(std::string("pipeline stage ") + std::to_string(stage_) +
                           ", micro-batch " + std::to_string(micro_batch) + ": " + what + " is " +
                           (tensor.defined() ? c10::str(tensor.sizes(), " ", tensor.scalar_type())
                                             : std::string("undefined")) +
                           ", expected float " + c10::str(c10::IntArrayRef(shape)));
}

void PipelineEngine::set_wire_dtype(torch::ScalarType dtype) {
  word_type_of(dtype, "pipeline engine wire dtype");  // throws for other dtypes
  wire_dtype_ = dtype;
}

torch::Tensor PipelineEngine::receive(int64_t micro_batch, int from, bool gradient) {
  // A gradient arrives for this stage's output, an activation as its input.
  const auto role = gradient ? comm::Role::kActivationGrad : comm::Role::kActivation;
  auto tensor = torch::empty(gradient ? output_shape_ : input_shape_, wire_dtype_);
  if (wire_dtype_ == torch::kFloat) {
    pp_.recv(tensor.data_ptr<float>(), size_t(tensor.numel()), from, tag_of(micro_batch), role);
    return on_device(tensor, device_);
  }
  pp_.recv(words_of(tensor), size_t(tensor.numel()), word_type_of(wire_dtype_, "pipeline receive"),
           from, tag_of(micro_batch), role);
  return on_device(tensor, device_).to(torch::kFloat);  // exact
}

void PipelineEngine::send(const torch::Tensor& tensor, int64_t micro_batch, int to, bool gradient,
                          Pending& pending) {
  check_shape(tensor, gradient ? "the input gradient" : "the stage output", micro_batch,
              gradient ? input_shape_ : output_shape_);
  const auto role = gradient ? comm::Role::kActivationGrad : comm::Role::kActivation;
  const uint64_t key = gradient ? kActivationGradKey : kActivationKey;
  // Narrowing to a 16-bit wire dtype is exact (set_wire_dtype).
  // A device's tensor travels from a host copy, kept until the send is done.
  auto contiguous = host_contiguous(tensor.detach().to(wire_dtype_));
  if (wire_dtype_ == torch::kFloat)
    pending.request = pp_.isend(contiguous.data_ptr<float>(), size_t(contiguous.numel()), to,
                                tag_of(micro_batch), role, key);
  else
    pending.request =
        pp_.isend(words_of(contiguous), size_t(contiguous.numel()),
                  word_type_of(wire_dtype_, "pipeline send"), to, tag_of(micro_batch), role, key);
  pending.keep_alive = std::move(contiguous);
}

double PipelineEngine::run_step(const PipelineStageWork& work, int64_t micro_batches,
                                double loss_scale) {
  const bool first = is_first(), last = is_last();
  if (micro_batches < 1)
    throw std::invalid_argument("pipeline engine: needs at least 1 micro-batch, got " +
                                std::to_string(micro_batches));
  if (!work.run_blocks) throw std::logic_error("pipeline engine: run_blocks is not set");
  if (first && !work.embed)
    throw std::logic_error("pipeline engine: the first stage needs embed, which is not set");
  if (last && !work.loss)
    throw std::logic_error("pipeline engine: the last stage needs loss, which is not set");

  // Per micro-batch between its forward and its backward: the stage's input
  // (a leaf whose gradient goes back, except on the first stage), what
  // backward starts from (the output, or loss·scale on the last stage) and
  // the send of the output (its storage is the output's, kept for backward
  // anyway).
  struct InFlight {
    torch::Tensor input, output;
    Pending output_send;
  };
  const auto count = static_cast<size_t>(micro_batches);
  std::vector<InFlight> in_flight(count);
  // The input-gradient send of the last backward. It is retired (waited for,
  // its buffer freed) in the next action, after that action's receive, so a
  // stage holds at most one. Waiting cannot stall: the previous stage takes
  // gradient m in its backward m, and nothing before it in its schedule needs
  // more of this stage than the gradients < m it was already sent (the stages
  // below form a closed system; simulated for both schedules in
  // tests/parallel/pipeline_schedule_test.cpp).
  Pending gradient_send;
  const auto retire_gradient_send = [&] {
    if (!gradient_send.keep_alive.defined()) return;
    pp_.wait(gradient_send.request);
    gradient_send = Pending{};
    held_send_bytes_ = 0;
  };
  int64_t held = 0;
  peak_in_flight_ = 0;
  peak_held_send_bytes_ = 0;
  double loss_sum = 0;

  const auto actions = schedule_->actions(stage_, stages_, micro_batches);
  size_t last_backward = actions.size();
  for (size_t i = 0; i < actions.size(); ++i)
    if (actions[i].kind == PipelineAction::Kind::kBackward) last_backward = i;
  for (size_t i = 0; i < actions.size(); ++i) {
    const PipelineAction& action = actions[i];
    const int64_t m = action.micro_batch;
    InFlight& slot = in_flight[size_t(m)];
    if (action.kind == PipelineAction::Kind::kForward) {
      if (first) {
        slot.input = work.embed(m);
      } else {
        slot.input = receive(m, stage_ - 1, /*gradient=*/false).requires_grad_(true);
      }
      retire_gradient_send();
      check_shape(slot.input, "the stage input", m, input_shape_);
      auto output = work.run_blocks(slot.input);
      if (last) {
        auto loss = work.loss(output, m);
        loss_sum += loss.item<double>() * loss_scale;
        slot.output = loss * loss_scale;
        if (work.gradient_scale != 1) slot.output = slot.output * work.gradient_scale;
      } else {
        send(output, m, stage_ + 1, /*gradient=*/false, slot.output_send);
        slot.output = output;
      }
      peak_in_flight_ = std::max(peak_in_flight_, ++held);
    } else {
      if (i == last_backward && work.before_last_backward) work.before_last_backward();
      if (last) {
        retire_gradient_send();
        slot.output.backward();
      } else {
        auto grad = receive(m, stage_ + 1, /*gradient=*/true);
        retire_gradient_send();
        // The gradient proves the next stage took the output: done at once.
        pp_.wait(slot.output_send.request);
        slot.output.backward(grad);
      }
      if (!first) {
        send(slot.input.grad(), m, stage_ - 1, /*gradient=*/true, gradient_send);
        held_send_bytes_ = gradient_send.keep_alive.nbytes();
        peak_held_send_bytes_ = std::max(peak_held_send_bytes_, held_send_bytes_);
        // The send holds its own contiguous copy (or the gradient itself):
        // the input and its gradient go with the slot.
      }
      slot = InFlight{};
      --held;
    }
  }
  retire_gradient_send();

  float loss_value = float(loss_sum);
  if (stages_ > 1) pp_.broadcast(&loss_value, 1, stages_ - 1, comm::Role::kOther);
  return double(loss_value);
}

double PipelineEngine::run_forward(const PipelineStageWork& work, int64_t micro_batches,
                                   double loss_scale) {
  const bool first = is_first(), last = is_last();
  if (micro_batches < 1)
    throw std::invalid_argument("pipeline engine: needs at least 1 micro-batch, got " +
                                std::to_string(micro_batches));
  if (!work.run_blocks || (first && !work.embed) || (last && !work.loss))
    throw std::logic_error("pipeline engine: stage " + std::to_string(stage_) +
                           " is missing a function its forward needs");
  // The output send of the previous micro-batch is retired once this one's
  // input is in: the next stage takes activations in order and needs nothing
  // else of this stage to get there, so waiting cannot stall.
  Pending previous_send;
  double loss_sum = 0;
  for (int64_t m = 0; m < micro_batches; ++m) {
    auto input = first ? work.embed(m) : receive(m, stage_ - 1, /*gradient=*/false);
    if (previous_send.keep_alive.defined()) pp_.wait(previous_send.request);
    previous_send = Pending{};
    check_shape(input, "the stage input", m, input_shape_);
    auto output = work.run_blocks(input);
    if (last)
      loss_sum += work.loss(output, m).item<double>() * loss_scale;
    else
      send(output, m, stage_ + 1, /*gradient=*/false, previous_send);
  }
  if (previous_send.keep_alive.defined()) pp_.wait(previous_send.request);
  float loss_value = float(loss_sum);
  if (stages_ > 1) pp_.broadcast(&loss_value, 1, stages_ - 1, comm::Role::kOther);
  return double(loss_value);
}

}  // namespace cmpi::parallel
