#include "parallel/pipeline/bidirectional_pipeline.h"

#include <stdexcept>
#include <string>

#include "parallel/mesh/process_groups.h"

namespace cmpi::parallel {
namespace {

// Tags above any micro-batch index the pipeline engine uses.
constexpr int kTagAToMirror = 1 << 20;
constexpr int kTagBToMirror = (1 << 20) + 1;

torch::Tensor flatten(const std::vector<torch::Tensor>& tensors) {
  std::vector<torch::Tensor> flat;
  for (const auto& t : tensors) flat.push_back(t.detach().reshape({-1}));
  return flat.empty() ? torch::empty({0}) : torch::cat(flat);
}

void unflatten_into(const torch::Tensor& flat, const std::vector<torch::Tensor>& tensors) {
  int64_t offset = 0;
  for (const auto& t : tensors) {
    torch::NoGradGuard no_grad;
    t.copy_(flat.narrow(0, offset, t.numel()).view_as(t));
    offset += t.numel();
  }
}

}  // namespace

std::unique_ptr<comm::Communicator> reversed_pipeline_group(ProcessGroups& groups) {
  comm::Communicator& pp = groups.pp();
  MPI_Comm reversed;
  MPI_Comm_split(pp.mpi(), 0, mirror_rank(pp), &reversed);
  return std::make_unique<comm::Communicator>(
      reversed, comm::GroupKind::kPp,
      std::make_unique<comm::PolicySlice>(groups.policy(), comm::GroupKind::kPp), groups.node());
}

std::unique_ptr<comm::Communicator> duplicate_group(ProcessGroups& groups, comm::GroupKind kind) {
  MPI_Comm copy;
  MPI_Comm_dup(groups.group(kind).mpi(), &copy);
  return std::make_unique<comm::Communicator>(
      copy, kind, std::make_unique<comm::PolicySlice>(groups.policy(), kind), groups.node());
}

void combine_with_mirror(comm::Communicator& pp, const std::vector<torch::Tensor>& a,
                         const std::vector<torch::Tensor>& b, comm::Role role, MirrorCombine how) {
  for (const auto* list : {&a, &b})
    for (const auto& t : *list)
      if (!t.defined() || t.scalar_type() != torch::kFloat)
        throw std::logic_error("combine_with_mirror: every tensor must be a defined float tensor");
  auto mine_a = flatten(a), mine_b = flatten(b);
  const double factor = how == MirrorCombine::kAverage ? 0.5 : 1.0;
  const int mirror = mirror_rank(pp);
  if (mirror == pp.rank()) {
    if (mine_a.numel() != mine_b.numel())
      throw std::logic_error("combine_with_mirror: the middle stage's copies differ in size");
    auto sum = (mine_a + mine_b) * factor;
    unflatten_into(sum, a);
    unflatten_into(sum, b);
    return;
  }
  // The mirror's B copy of our A stage and its A copy of our B stage.
  auto their_b = torch::empty_like(mine_a), their_a = torch::empty_like(mine_b);
  auto send_a =
      pp.isend(mine_a.data_ptr<float>(), size_t(mine_a.numel()), mirror, kTagAToMirror, role);
  auto send_b =
      pp.isend(mine_b.data_ptr<float>(), size_t(mine_b.numel()), mirror, kTagBToMirror, role);
  pp.recv(their_b.data_ptr<float>(), size_t(their_b.numel()), mirror, kTagBToMirror, role);
  pp.recv(their_a.data_ptr<float>(), size_t(their_a.numel()), mirror, kTagAToMirror, role);
  pp.wait(send_a);
  pp.wait(send_b);
  // Our A + their B on this rank, their A + our B on theirs: the same sum.
  unflatten_into((mine_a + their_b) * factor, a);
  unflatten_into((their_a + mine_b) * factor, b);
}

}  // namespace cmpi::parallel
