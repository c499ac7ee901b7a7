// One custom autograd Function. Its forward runs under LibTorch's no-grad
// mode (Function::apply turns recording off), saves the inputs and the
// generators' states; its backward detaches the saved inputs into fresh
// leaves, replays the generators, runs the forward again with recording on,
// calls backward on that graph and hands the leaves' gradients on. What the
// backward needs besides tensors (the forward callable, the generators and
// their states) travels in the context as a capsule.
#include "models/recompute.h"

#include <ATen/CPUGeneratorImpl.h>

#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>

namespace cmpi::models {
namespace {

using torch::autograd::variable_list;

struct Replay : torch::CustomClassHolder {
  RecomputedForward forward;
  std::vector<at::Generator> generators;  // the default CPU (and device) generator first
  std::vector<at::Tensor> states;         // theirs before the first forward
  size_t input_count = 0;                 // the caller's inputs (a placeholder may follow)
};

std::vector<at::Tensor> states_of(std::vector<at::Generator>& generators) {
  std::vector<at::Tensor> states;
  for (auto& generator : generators) {
    std::lock_guard<std::mutex> lock(generator.mutex());
    states.push_back(generator.get_state());
  }
  return states;
}

void set_states(std::vector<at::Generator>& generators, const std::vector<at::Tensor>& states) {
  for (size_t i = 0; i < generators.size(); ++i) {
    std::lock_guard<std::mutex> lock(generators[i].mutex());
    generators[i].set_state(states[i]);
  }
}

// The generators at the first forward's states for its scope, then back
// where they were (also when the recomputation throws).
class ReplayedGenerators {
 public:
  ReplayedGenerators(std::vector<at::Generator>& generators, const std::vector<at::Tensor>& then)
      : generators_(generators), now_(states_of(generators)) {
    set_states(generators_, then);
  }
  ~ReplayedGenerators() { set_states(generators_, now_); }
  ReplayedGenerators(const ReplayedGenerators&) = delete;
  ReplayedGenerators& operator=(const ReplayedGenerators&) = delete;

 private:
  std::vector<at::Generator>& generators_;
  std::vector<at::Tensor> now_;
};

Replay& replay_of(torch::autograd::AutogradContext* ctx) {
  auto* replay = dynamic_cast<Replay*>(ctx->saved_data["replay"].toCapsule().get());
  if (!replay) throw std::logic_error("recompute_in_backward: the context lost its replay");
  return *replay;
}

struct RecomputeFunction : torch::autograd::Function<RecomputeFunction> {
  // `inputs` as a TensorList: autograd takes each element for an input
  // (a std::vector argument would count as one non-tensor argument).
  static variable_list forward(torch::autograd::AutogradContext* ctx, at::TensorList inputs,
                               c10::intrusive_ptr<Replay> replay) {
    replay->states = states_of(replay->generators);
    ctx->save_for_backward(inputs.vec());
    auto outputs = replay->forward(inputs.slice(0, replay->input_count).vec());
    ctx->saved_data["replay"] = c10::IValue::make_capsule(std::move(replay));
    return outputs;
  }

  static variable_list backward(torch::autograd::AutogradContext* ctx, variable_list grads) {
    Replay& replay = replay_of(ctx);
    const auto saved = ctx->get_saved_variables();
    variable_list leaves;
    for (size_t i = 0; i < replay.input_count; ++i)
      leaves.push_back(saved[i].detach().requires_grad_(saved[i].requires_grad()));
    variable_list outputs;
    {
      ReplayedGenerators replayed(replay.generators, replay.states);
      torch::AutoGradMode recording(true);
      outputs = replay.forward(leaves);
    }
    variable_list roots, root_grads;
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i].requires_grad() && grads[i].defined()) {
        roots.push_back(outputs[i]);
        root_grads.push_back(grads[i]);
      }
    if (!roots.empty()) torch::autograd::backward(roots, root_grads);
    // One gradient per tensor input, and none for the replay argument.
    variable_list input_grads(saved.size() + 1);
    for (size_t i = 0; i < leaves.size(); ++i)
      if (leaves[i].requires_grad()) input_grads[i] = leaves[i].grad();
    return input_grads;
  }
};

}  // namespace

variable_list recompute_in_backward(RecomputedForward forward, const variable_list& inputs,
                                    std::vector<at::Generator> generators) {
  if (!torch::GradMode::is_enabled()) return forward(inputs);
  auto replay = c10::make_intrusive<Replay>();
  replay->forward = std::move(forward);
  replay->generators.push_back(at::detail::getDefaultCPUGenerator());
  // On a device the torch::nn::Dropout layers draw from its default
  // generator: replayed too, so the recomputed masks are the first forward's.
  if (!inputs.empty() && !inputs[0].is_cpu())
    replay->generators.push_back(at::globalContext().defaultGenerator(inputs[0].device()));
  for (auto& generator : generators) replay->generators.push_back(std::move(generator));
  replay->input_count = inputs.size();
  variable_list with_placeholder = inputs;
  bool any_requires_grad = false;
  for (const auto& input : inputs) any_requires_grad |= input.requires_grad();
  // The Function joins the graph only when an input requires gradients; the
  // parameters inside need it to, so a placeholder leaf stands in (a stage's
  // first block on a tensor that needs no gradient).
  if (!any_requires_grad)
    with_placeholder.push_back(
        torch::zeros({1}, inputs.empty() ? torch::TensorOptions()
                                         : torch::TensorOptions().device(inputs[0].device()))
            .requires_grad_());
  return RecomputeFunction::apply(at::TensorList(with_placeholder), std::move(replay));
}

}  // namespace cmpi::models
