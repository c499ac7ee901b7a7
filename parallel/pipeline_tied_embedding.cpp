#include "parallel/pipeline_tied_embedding.h"

#include <mpi.h>

#include <stdexcept>
#include <string>

#include "comm/communicator.h"
#include "comm/policy.h"

namespace cmpi::parallel {
namespace {

// Error-feedback key of the tied table's gradient (its own residual).
constexpr uint64_t kTiedGradientKey = 3;

}  // namespace

PipelineTiedEmbedding::PipelineTiedEmbedding(comm::Communicator& pp, const comm::Policy& policy)
    : pp_(pp) {
  const int stages = pp.size();
  if (stages < 2) return;
  const bool end_stage = pp.rank() == 0 || pp.rank() == stages - 1;
  if (stages == 2) {
    group_ = &pp_;
    return;
  }
  MPI_Comm pair = MPI_COMM_NULL;
  MPI_Comm_split(pp.mpi(), end_stage ? 0 : MPI_UNDEFINED, pp.rank(), &pair);
  if (!end_stage) return;
  own_ = std::make_unique<comm::Communicator>(
      pair, comm::GroupKind::kPp,
      std::make_unique<comm::PolicySlice>(policy, comm::GroupKind::kPp));
  group_ = own_.get();
}

PipelineTiedEmbedding::~PipelineTiedEmbedding() = default;

std::vector<comm::AutoDecision> PipelineTiedEmbedding::adapt(int64_t step) {
  return own_ ? own_->adapt(step) : std::vector<comm::AutoDecision>{};
}

void PipelineTiedEmbedding::sync_gradients(const torch::Tensor& weight) {
  if (!group_) return;
  const std::string stage = "pipeline stage " + std::to_string(pp_.rank());
  if (!weight.defined() || weight.scalar_type() != torch::kFloat)
    throw std::invalid_argument(
        stage + ": the tied embedding must be a float32 tensor, got " +
        (weight.defined() ? c10::str(weight.scalar_type()) : std::string("an undefined tensor")));
  torch::NoGradGuard no_grad;
  auto grad = weight.grad();
  if (!grad.defined()) {
    grad = torch::zeros_like(weight);
    weight.mutable_grad() = grad;
  }
  const bool in_place = grad.is_contiguous();
  auto buffer = in_place ? grad : grad.contiguous();
  group_->allreduce(buffer.data_ptr<float>(), size_t(buffer.numel()), comm::Role::kGradient,
                    kTiedGradientKey);
  if (!in_place) grad.copy_(buffer);
  if (own_) {
    // Report the two-rank group's traffic under pp.
    for (int op = 0; op < comm::kOpCount; ++op)
      pp_.stats().at(comm::Op(op)) += own_->stats().at(comm::Op(op));
    own_->stats().reset();
  }
}

}  // namespace cmpi::parallel
