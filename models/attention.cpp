#include "models/attention.h"

#include "models/blocked_attention.h"
#include "models/recompute.h"
#include "parallel/context/ring_attention.h"
#include "parallel/low_precision_ops.h"
#include "parallel/replayed_dropout.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace cmpi::models {

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const GptOptions& options, comm::Communicator& tp,
                                                 uint64_t buffer_key, uint64_t dropout_seed,
                                                 torch::Tensor future_mask,
                                                 parallel::ContextGroup context,
                                                 std::optional<uint64_t> stream_dropout_seed)
    : local_kv_heads_(parallel::tp_split(options.kv_head_count(), tp,
                                         options.kv_heads > 0 ? "model.kv_heads" : "model.heads")),
      group_(options.query_group()),
      local_heads_(local_kv_heads_ * group_),
      head_dim_(options.head_dim()),
      attn_dropout_(options.dropout),
      attn_dropout_generator_(at::make_generator<at::CPUGeneratorImpl>(dropout_seed)),
      future_mask_(std::move(future_mask)),
      block_size_(options.attention_block_size),
      backend_(options.attention_backend),
      sequence_parallel_(options.sequence_parallel),
      context_(context),
      buffer_key_(buffer_key) {
  if (!(options.dropout >= 0.0 && options.dropout < 1.0))
    throw std::invalid_argument("model.dropout must lie in [0, 1), got " +
                                std::to_string(options.dropout));
  if (options.heads % options.kv_head_count() != 0)
    throw std::invalid_argument("model.heads (" + std::to_string(options.heads) +
                                ") must be divisible by model.kv_heads (" +
                                std::to_string(options.kv_head_count()) + ")");
  parallel::ParallelLinearOptions qkv_options;
  qkv_options.in_features = options.hidden;
  qkv_options.out_features = (options.heads + 2 * options.kv_head_count()) * head_dim_;
  qkv_options.bias = options.bias;
  qkv_options.buffer_key = buffer_key;
  qkv_options.materialize = options.materialize_parameters;
  qkv_options.sequence_parallel = options.sequence_parallel;
  qkv = register_module("qkv", parallel::ColumnParallelLinear(qkv_options, tp));
  parallel::ParallelLinearOptions out_options;
  out_options.in_features = options.hidden;
  out_options.out_features = options.hidden;
  out_options.bias = options.bias;
  out_options.buffer_key = buffer_key + 1;
  out_options.materialize = options.materialize_parameters;
  out_options.sequence_parallel = options.sequence_parallel;
  out_options.sum_in_input_dtype = options.tp_sums_in_compute_dtype;
  out = register_module("out", parallel::RowParallelLinear(out_options, tp));
  resid_dropout_ = register_module("resid_dropout", torch::nn::Dropout(options.dropout));
  if (stream_dropout_seed)
    stream_dropout_generator_ = at::make_generator<at::CPUGeneratorImpl>(*stream_dropout_seed);
  if (options.position == PositionEncoding::kRotary)
    rotary_.emplace(head_dim_, options.rotary_dims(), options.rotary_base, options.seq_len,
                    options.rope_scaling);
}

void CausalSelfAttentionImpl::describe(const std::string& prefix, const GptOptions& options,
                                       std::vector<ParamLayout>& out_layouts) const {
  using Init = ParamLayout::Init;
  out_layouts.push_back(
      {prefix + "qkv.weight", qkv->weight, 0, Init::kNormal, options.input_init_std(), true});
  if (qkv->bias.defined())
    out_layouts.push_back({prefix + "qkv.bias", qkv->bias, 0, Init::kZeros, 0, false});
  out_layouts.push_back(
      {prefix + "out.weight", out->weight, 1, Init::kNormal, options.output_init_std(), true});
  if (out->bias.defined())
    out_layouts.push_back({prefix + "out.bias", out->bias, -1, Init::kZeros, 0, false});
}

CausalSelfAttentionImpl::Heads CausalSelfAttentionImpl::project(const torch::Tensor& x,
                                                                int64_t first_position) {
  // [B, T, kv heads, (q of the group's query heads, k, v), head_dim] for this
  // rank's heads (the whole sequence, gathered under sequence parallelism);
  // without grouping a group is one head's [q, k, v].
  const auto projected = qkv->forward(x);
  const int64_t batch = projected.size(0), time = projected.size(1);
  const auto fused = projected.view({batch, time, local_kv_heads_, group_ + 2, head_dim_});
  Heads h;
  h.q = fused.narrow(3, 0, group_)
            .reshape({batch, time, local_heads_, head_dim_})
            .transpose(1, 2);                     // [B, nh, T, hd], query head = group·kv + j
  h.k = fused.select(3, group_).transpose(1, 2);  // [B, kv, T, hd]
  h.v = fused.select(3, group_ + 1).transpose(1, 2);
  if (rotary_ && context_.active()) {
    // The two chunks of this cp rank turn by their own global positions.
    const auto& shard = *context_.shard;
    const auto rotate = [this, &shard](const torch::Tensor& in) {
      const int64_t c = shard.chunk();
      return torch::cat({rotary_->apply(in.narrow(2, 0, c), shard.first_position(0)),
                         rotary_->apply(in.narrow(2, c, c), shard.first_position(1))},
                        2);
    };
    h.q = parallel::in_float32(h.q, rotate);
    h.k = parallel::in_float32(h.k, rotate);
  } else if (rotary_) {
    const auto rotate = [this, first_position](const torch::Tensor& in) {
      return rotary_->apply(in, first_position);
    };
    h.q = parallel::in_float32(h.q, rotate);
    h.k = parallel::in_float32(h.k, rotate);
  }
  return h;
}

torch::Tensor CausalSelfAttentionImpl::repeat_for_groups(const torch::Tensor& kv) const {
  return group_ > 1 ? kv.repeat_interleave(group_, 1) : kv;
}

torch::Tensor CausalSelfAttentionImpl::merge_heads(const torch::Tensor& attended) {
  const int64_t batch = attended.size(0), time = attended.size(2);
  auto y = attended.transpose(1, 2).reshape({batch, time, local_heads_ * head_dim_});
  if (sequence_parallel_ || context_.active())
    return dropout_drawn_from(out->forward(y), is_training() ? attn_dropout_ : 0.0,
                              stream_dropout_generator());
  return parallel::in_float32(
      out->forward(y), [this](const torch::Tensor& in) { return resid_dropout_->forward(in); });
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x) {
  const Heads h = project(x, 0);
  if (context_.active()) {
    parallel::RingAttentionOptions ring;
    ring.query_group = group_;
    ring.dropout = attn_dropout_;
    ring.training = is_training();
    ring.buffer_key = buffer_key_;
    return merge_heads(parallel::ring_attention(h.q, h.k, h.v, *context_.cp, *context_.shard, ring,
                                                attn_dropout_generator_));
  }
  const auto k = repeat_for_groups(h.k), v = repeat_for_groups(h.v);
  torch::Tensor attended;
  if (recompute_core_ && is_training())
    attended = recompute_in_backward(
        [this](const torch::autograd::variable_list& in) -> torch::autograd::variable_list {
          return {attend(in[0], in[1], in[2])};
        },
        {h.q, k, v}, {attn_dropout_generator_})[0];  // the core draws from it alone
  else
    attended = attend(h.q, k, v);
  return merge_heads(attended);
}

torch::Tensor CausalSelfAttentionImpl::forward_cached(const torch::Tensor& x, KvCache& cache,
                                                      int64_t layer) {
  if (is_training() || sequence_parallel_ || context_.active())
    throw std::logic_error(
        "cached attention is for inference: eval mode, without sequence or context parallelism");
  const int64_t start = cache.length();
  const Heads h = project(x, start);
  const auto [cached_keys, cached_values] = cache.append(layer, h.k, h.v);
  const int64_t time = h.q.size(2), total = start + time;
  // New query t sits at position start + t and sees keys 0 .. start + t: the
  // rows [start, start + T) of the model's causal mask.
  const auto future = future_mask_.narrow(0, start, time).narrow(1, 0, total);
  const auto weights = parallel::scaled_causal_softmax(
      parallel::mixed_matmul(h.q, repeat_for_groups(cached_keys).transpose(-2, -1)),
      std::sqrt(double(head_dim_)), future);
  return merge_heads(parallel::mixed_matmul(weights, repeat_for_groups(cached_values)));
}

void CausalSelfAttentionImpl::to(torch::Device device, bool non_blocking) {
  torch::nn::Module::to(device, non_blocking);
  if (future_mask_.defined()) future_mask_ = future_mask_.to(device);
  if (rotary_) rotary_->to(device);
}

bool CausalSelfAttentionImpl::fused_for(const torch::Tensor& q) const {
  if (is_training() && attn_dropout_ > 0) return false;  // its dropout cannot be replayed
  if (backend_ == AttentionBackend::kAuto) return q.is_cuda();
  return backend_ == AttentionBackend::kFused;
}

torch::Tensor CausalSelfAttentionImpl::attend(const torch::Tensor& q, const torch::Tensor& k,
                                              const torch::Tensor& v) {
  const int64_t time = q.size(2);
  if (fused_for(q)) {
    // Causal over the whole sequence (query t sees keys 0..t), scale 1/√hd:
    // the explicit path's mask and scale.
    return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                            /*is_causal=*/true);
  }
  if (block_size_ > 0 && block_size_ < time) {
    // The blocked path computes in float32 (a 16-bit run widens q, k, v
    // exactly and rounds the result once).
    const auto dtype = q.scalar_type();
    const auto widen = [](const torch::Tensor& t) { return t.to(torch::kFloat); };
    return blocked_causal_attention(widen(q), widen(k), widen(v), future_mask_, block_size_,
                                    attn_dropout_, is_training(), attn_dropout_generator_)
        .to(dtype);
  }
  // Scores in the compute dtype; scaling, mask and softmax in float32 (a
  // 16-bit compute dtype: its fused softmax's precision), the weights in the
  // compute dtype for the product with v.
  const auto future = future_mask_.narrow(0, 0, time).narrow(1, 0, time);
  auto weights = parallel::scaled_causal_softmax(parallel::mixed_matmul(q, k.transpose(-2, -1)),
                                                 std::sqrt(double(head_dim_)), future);
  if (is_training()) weights = dropout_drawn_from(weights, attn_dropout_, attn_dropout_generator_);
  return parallel::mixed_matmul(weights, v);
}

torch::Tensor dropout_drawn_from(const torch::Tensor& x, double p, at::Generator& generator) {
  if (p <= 0) return x;
  return parallel::in_float32(x, [p, &generator](const torch::Tensor& in) {
    const auto keep = parallel::keep_draws(in, 1.0 - p, generator);
    return in * keep / (1.0 - p);
  });
}

torch::Tensor causal_future_mask(int64_t seq_len) {
  return torch::ones({seq_len, seq_len}, torch::dtype(torch::kBool)).triu(1);
}

}  // namespace cmpi::models
