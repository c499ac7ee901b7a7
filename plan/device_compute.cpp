#include "plan/device_compute.h"

#include "models/family/gpt_family.h"

namespace cmpi::plan {
namespace {

struct Kernels {
  double gemm_seconds = 0;
  double bytes = 0;
};

}  // namespace

DeviceMicroBatch device_micro_batch(const config::Config& c, const StageShape& s, int tp,
                                    const DeviceProfile& device, bool flash_attention) {
  const models::GptOptions o = models::gpt_options(c.model);
  const double peak = device.peak_for(c.training.precision);
  const double word = c.training.precision == config::Precision::kFp32 ? 4 : 2;
  const double seq = double(c.model.seq_len), h = double(c.model.hidden);
  const double tokens = double(c.training.micro_batch) * seq;
  const double qkv = double((o.heads + 2 * o.kv_head_count()) * o.head_dim()) / tp;
  const double width = double(o.mlp_width()) / tp;
  const double heads = double(o.heads) / tp;
  const double head_dim = double(o.head_dim());
  const auto gemm = [&](double m, double n, double k) {
    const double flops = 2 * m * n * k;
    return flops / (peak * device.gemm_efficiency_at(flops));
  };

  // The attention core of one block: QK^T and AV over heads/tp x micro_batch
  // instances, causal mask not exploited (plan/model_flops.h).
  Kernels core;
  const double core_flops = 4 * tokens * seq * heads * head_dim;
  if (flash_attention) {
    core.gemm_seconds = core_flops / (peak * device.flash_attention_efficiency);
  } else {
    // Two batched GEMMs of half the core's FLOPs each.
    core.gemm_seconds = core_flops / (peak * device.gemm_efficiency_at(core_flops / 2));
    const double passes = 4 + (c.model.dropout > 0 ? 2 + 1 / word : 0);
    core.bytes = tokens * heads * seq * passes * word;
  }

  // One block without its attention core.
  Kernels block;
  block.gemm_seconds = gemm(tokens, qkv, h) + gemm(tokens, h, heads * head_dim) +
                       (o.gated_mlp() ? 2 : 1) * gemm(tokens, width, h) + gemm(tokens, h, width);
  const double replicated_tokens = c.parallel.sequence_parallel ? tokens / tp : tokens;
  block.bytes = replicated_tokens * (10 * h * word + (c.model.dropout > 0 ? 2 * h : 0)) +
                tokens * (2 * qkv + (o.gated_mlp() ? 3 : 2) * width) * word;

  Kernels head;
  if (s.has_head) {
    const double vocab = double(o.padded_vocab_size(tp)) / tp;
    head.gemm_seconds = gemm(tokens, vocab, h);
    head.bytes = tokens * vocab * 3 * 4;
  }

  const double bandwidth = device.memory_bytes_per_s * device.memory_efficiency;
  const double layers = double(s.layers);
  DeviceMicroBatch t;
  t.gemm_seconds = layers * (block.gemm_seconds + core.gemm_seconds) + head.gemm_seconds;
  t.memory_seconds = (layers * (block.bytes + core.bytes) + head.bytes) / bandwidth;
  t.forward_seconds = t.gemm_seconds + t.memory_seconds;
  t.core_seconds = core.gemm_seconds + core.bytes / bandwidth;
  if (c.training.recompute == "selective") {
    t.recompute_seconds = layers * (core.gemm_seconds + core.bytes / bandwidth);
  } else {
    const double recomputed = double(recomputed_blocks(c, s.layers));
    t.recompute_seconds = recomputed * (block.gemm_seconds + core.gemm_seconds +
                                        (block.bytes + core.bytes) / bandwidth);
  }
  t.backward_seconds = 2 * t.forward_seconds + t.recompute_seconds;
  return t;
}

double device_optimizer_seconds(const StageShape& s, const parallel::ParallelDims& dims,
                                const DeviceProfile& device) {
  // ZeRO shards over the dp group, which spans dp x cp ranks.
  const double shard = double(s.parameters) / (dims.zero_stage >= 1 ? dims.dp * dims.cp : 1);
  return shard * 32 / (device.memory_bytes_per_s * device.memory_efficiency);
}

}  // namespace cmpi::plan
