// Each pair is a torch::autograd::Function whose forward and backward call
// the plain helpers below; a function remembers its tp group by address
// (parallel/tensor/tp_autograd_context.h).
#include "parallel/tensor/tensor_parallel_ops.h"

#include <stdexcept>
#include <string>

#include "parallel/host_staging.h"
#include "parallel/tensor/tp_autograd_context.h"
#include "parallel/tensor_words.h"

namespace cmpi::parallel {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

void require_travelling(const torch::Tensor& x, const char* op) {
  require_travelling_tensor(x, op, 1, "at least one dim");
}

struct CopyToRegion : torch::autograd::Function<CopyToRegion> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, comm::Communicator* tp,
                               uint64_t key) {
    remember_tp_group(ctx, *tp, key);
    return x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {tp_allreduce_sum(grads[0], remembered_tp_group(ctx), comm::Role::kActivationGrad,
                             remembered_buffer_key(ctx)),
            torch::Tensor(), torch::Tensor()};
  }
};

struct ReduceFromRegion : torch::autograd::Function<ReduceFromRegion> {
  static torch::Tensor forward(AutogradContext*, const torch::Tensor& x, comm::Communicator* tp,
                               uint64_t key) {
    return tp_allreduce_sum(x, *tp, comm::Role::kActivation, key);
  }
  static variable_list backward(AutogradContext*, variable_list grads) {
    return {grads[0], torch::Tensor(), torch::Tensor()};
  }
};

struct GatherFromRegion : torch::autograd::Function<GatherFromRegion> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, comm::Communicator* tp,
                               uint64_t key) {
    remember_tp_group(ctx, *tp, key);
    return tp_allgather_last_dim(x, *tp, comm::Role::kActivation, key);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {tp_own_slice_last_dim(grads[0], remembered_tp_group(ctx)), torch::Tensor(),
            torch::Tensor()};
  }
};

struct ScatterToRegion : torch::autograd::Function<ScatterToRegion> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, comm::Communicator* tp,
                               uint64_t key) {
    remember_tp_group(ctx, *tp, key);
    return tp_own_slice_last_dim(x, *tp);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {tp_allgather_last_dim(grads[0], remembered_tp_group(ctx), comm::Role::kActivationGrad,
                                  remembered_buffer_key(ctx)),
            torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor tp_allreduce_sum(const torch::Tensor& x, comm::Communicator& tp, comm::Role role,
                               uint64_t buffer_key) {
  require_travelling(x, "tensor-parallel allreduce");
  auto out = host_copy(x.detach());  // a device tensor travels through host memory
  if (x.scalar_type() == torch::kFloat) {
    tp.allreduce(out.data_ptr<float>(), size_t(out.numel()), role, buffer_key);
  } else {
    // 16-bit values travel as 16-bit words; the sum is taken in float and
    // rounded once per reduction step (comm/communicator_words16.cpp).
    tp.allreduce(words_of(out), size_t(out.numel()),
                 word_type_of(x.scalar_type(), "tensor-parallel allreduce"), role, buffer_key);
  }
  return on_device(out, x.device());
}

torch::Tensor tp_allgather_along(const torch::Tensor& x, int64_t dim, comm::Communicator& tp,
                                 comm::Role role, uint64_t buffer_key, const char* what) {
  const auto local = host_contiguous(x.detach());  // a device tensor travels through host memory
  const int parts = tp.size();
  auto gathered = torch::empty({int64_t(parts) * local.numel()}, local.options());
  const std::vector<size_t> counts(size_t(parts), size_t(local.numel()));
  if (x.scalar_type() == torch::kFloat)
    tp.allgather(local.data_ptr<float>(), gathered.data_ptr<float>(), counts, role, buffer_key);
  else  // 16-bit values travel as 16-bit words
    tp.allgather(words_of(local), words_of(gathered), counts, word_type_of(x.scalar_type(), what),
                 role, buffer_key);
  // [parts, ..., L, ...] -> [..., parts, L, ...] -> [..., parts * L, ...]:
  // rank r's block lands at [r*L, (r+1)*L) along `dim`.
  std::vector<int64_t> stacked{int64_t(parts)};
  for (int64_t s : local.sizes()) stacked.push_back(s);
  std::vector<int64_t> joined(local.sizes().begin(), local.sizes().end());
  joined[size_t(dim)] *= parts;
  return on_device(gathered.view(stacked).movedim(0, dim).reshape(joined), x.device());
}

torch::Tensor tp_allgather_last_dim(const torch::Tensor& x, comm::Communicator& tp, comm::Role role,
                                    uint64_t buffer_key) {
  require_travelling(x, "tensor-parallel allgather");
  return tp_allgather_along(x, x.dim() - 1, tp, role, buffer_key, "tensor-parallel allgather");
}

torch::Tensor tp_own_slice_last_dim(const torch::Tensor& x, const comm::Communicator& tp) {
  require_travelling(x, "tensor-parallel split");
  const int64_t width = x.size(-1);
  if (width % tp.size() != 0)
    throw std::invalid_argument("tensor-parallel split: last dim " + std::to_string(width) +
                                " is not divisible by the tp group size " +
                                std::to_string(tp.size()));
  const int64_t slice = width / tp.size();
  return x.detach().narrow(-1, int64_t(tp.rank()) * slice, slice).contiguous();
}

torch::Tensor copy_to_tp_region(const torch::Tensor& x, comm::Communicator& tp,
                                uint64_t buffer_key) {
  if (tp.size() == 1) return x;
  require_travelling(x, "copy_to_tp_region");
  return CopyToRegion::apply(x, &tp, buffer_key);
}

torch::Tensor reduce_from_tp_region(const torch::Tensor& x, comm::Communicator& tp,
                                    uint64_t buffer_key) {
  if (tp.size() == 1) return x;
  return ReduceFromRegion::apply(x, &tp, buffer_key);
}

torch::Tensor gather_from_tp_region(const torch::Tensor& x, comm::Communicator& tp,
                                    uint64_t buffer_key) {
  if (tp.size() == 1) return x;
  return GatherFromRegion::apply(x, &tp, buffer_key);
}

torch::Tensor scatter_to_tp_region(const torch::Tensor& x, comm::Communicator& tp,
                                   uint64_t buffer_key) {
  if (tp.size() == 1) return x;
  return ScatterToRegion::apply(x, &tp, buffer_key);
}

}  // namespace cmpi::parallel
