#include "parallel/pipeline/pipeline_tied_embedding.h"

#include <mpi.h>

#include <stdexcept>
#include <string>

#include "comm/communicator.h"
#include "comm/policy.h"
#include "parallel/host_staging.h"

namespace cmpi::parallel {
namespace {

// Error-feedback keys: the last stage's gradient on its way to the first,
// and each reduced part on its way back.
constexpr uint64_t kTiedGradientKey = 3;
constexpr uint64_t kReducedPartKeyBase = uint64_t(1) << 33;
constexpr int kGradientTag = 17;

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

std::vector<comm::AutoDecision> PipelineTiedEmbedding::adapt(int64_t step, double previous_loss) {
  return own_ ? own_->adapt(step, previous_loss) : std::vector<comm::AutoDecision>{};
}

bool PipelineTiedEmbedding::reduces() const {
  return group_ != nullptr && group_->rank() == 0;
}

void PipelineTiedEmbedding::gather_to_first_stage(const torch::Tensor& weight) {
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
  const size_t n = size_t(grad.numel());
  if (reduces()) {
    received_.resize(n);
    group_->recv(received_.data(), n, 1, kGradientTag, comm::Role::kGradient);
    grad.add_(
        on_device(torch::from_blob(received_.data(), grad.sizes(), torch::kFloat), grad.device()));
  } else {
    const auto contiguous = host_contiguous(grad);  // through host memory from a device
    group_->send(contiguous.data_ptr<float>(), n, 0, kGradientTag, comm::Role::kGradient,
                 kTiedGradientKey);
  }
  report_under_pp();
}

void PipelineTiedEmbedding::share_reduced(size_t part, float* data, size_t n) {
  if (!group_) return;
  group_->broadcast(data, n, 0, comm::Role::kGradient, kReducedPartKeyBase + part);
  report_under_pp();
}

void PipelineTiedEmbedding::report_under_pp() {
  if (!own_) return;
  for (int op = 0; op < comm::kOpCount; ++op)
    pp_.stats().at(comm::Op(op)) += own_->stats().at(comm::Op(op));
  own_->stats().reset();
}

}  // namespace cmpi::parallel
