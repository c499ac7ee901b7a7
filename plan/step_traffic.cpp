#include "plan/step_traffic.h"

#include <algorithm>
#include <map>

#include "comm/policy.h"
#include "config/memory_preflight.h"
#include "parallel/pipeline_schedule.h"
#include "parallel/pipeline_stages.h"
#include "plan/layer_gathers.h"

namespace cmpi::plan {
namespace {

using comm::GroupKind;
using comm::Op;
using comm::Role;

double ring_share_fraction(int n) {
  return n > 1 ? double(n - 1) / n : 0.0;
}

// A chain broadcast from `root`: every rank forwards the buffer except the
// chain's last.
double chain_broadcast_fraction(int rank, int root, int n) {
  return (rank - root + n) % n == n - 1 ? 0.0 : 1.0;
}

// What CommStats counts for one allreduce on the group's rank `rank`: the
// bytes that rank sends in the project's ring (2n - its two segments), the
// same count whichever algorithm runs it (comm/communicator.cpp).
double allreduce_fraction(int64_t bytes, int n, int rank = 0) {
  if (n < 2 || bytes <= 0) return 0.0;
  const int64_t elems = bytes / int64_t(sizeof(float));
  auto segment = [&](int j) { return elems / n + (j < elems % n ? 1 : 0); };
  return double(2 * elems - segment(rank) - segment((rank + 1) % n)) * sizeof(float) /
         double(bytes);
}

// The learned position table's elements (replicated); none with rotary
// positions.
int64_t position_table(const config::Config& c) {
  return c.model.position == "learned" ? c.model.seq_len * c.model.hidden : 0;
}

// Per-layer ZeRO-3's units and uses on `stage`, as models::Gpt's
// layer_schedule() cuts them, with their gathers over one step counted.
StageUnits layer_units(const config::Config& c, const parallel::ParallelDims& dims, int stage,
                       const StageShape& shape, int64_t per_block, int64_t micro_batches) {
  const int64_t h = c.model.hidden, tp = dims.tp, table = c.model.vocab_size * h / tp;
  const bool tied = c.model.tie_embeddings;
  const int64_t positions = position_table(c);
  StageUnits units;
  const auto add_unit = [&](const std::vector<ParameterRun>& runs) {
    units.units.push_back(zero_unit(runs, dims.dp, c.parallel.dp_bucket_bytes));
    return units.units.size() - 1;
  };
  size_t embedding = 0;
  if (shape.has_embedding && (tied || positions == 0))
    embedding = add_unit(std::vector<ParameterRun>{{table + positions, !tied}});
  else if (shape.has_embedding)
    embedding = add_unit(std::vector<ParameterRun>{{table, true}, {positions, false}});
  else if (shape.has_head && tied)
    embedding = add_unit({{table, false}});
  if (shape.has_embedding) units.uses.push_back({embedding});
  for (int64_t l = 0; l < shape.layers; ++l) units.uses.push_back({add_unit({{per_block, false}})});
  if (shape.has_head && tied) units.uses.push_back({add_unit({{2 * h, false}}), embedding});
  if (shape.has_head && !tied) units.uses.push_back({add_unit({{2 * h + table, false}})});
  units.first_input_has_gradient = !shape.has_embedding;
  std::vector<StagePass> passes;
  for (const auto& a : parallel::make_pipeline_schedule(c.parallel.schedule)
                           ->actions(stage, dims.pp, micro_batches))
    passes.push_back(a.kind == parallel::PipelineAction::Kind::kForward ? StagePass::kForward
                                                                        : StagePass::kBackward);
  count_gathers(units, passes);
  return units;
}

int64_t block_parameters(const config::Config& c, int64_t tp) {
  const int64_t h = c.model.hidden, r = c.model.mlp_ratio;
  // Column-parallel weights and biases split over tp; LayerNorms and the
  // row-parallel layers' biases are replicated (models/transformer_block.cpp).
  return 4 * h + (3 * h * h + 3 * h) / tp + h * h / tp + h + (r * h * h + r * h) / tp +
         r * h * h / tp + h;
}

}  // namespace

StageShape stage_shape(const config::Config& c, const parallel::ParallelDims& dims, int stage) {
  const auto s =
      parallel::stage_of(c.model.layers, dims.pp, stage, config::gpt_stage_layers(c, dims));
  const int64_t h = c.model.hidden, tp = dims.tp;
  const int64_t per_block = block_parameters(c, tp);
  StageShape shape;
  shape.stage = stage;
  shape.layers = s.layers();
  shape.has_embedding = s.has_embedding;
  shape.has_head = s.has_head;
  shape.parameters = s.layers() * per_block;
  if (s.has_embedding) shape.parameters += c.model.vocab_size * h / tp + position_table(c);
  // The head's table: tied, the embedding's (a copy on a head-only stage);
  // untied, its own.
  const bool own_head_table = !c.model.tie_embeddings || !s.has_embedding;
  if (s.has_head) shape.parameters += 2 * h + (own_head_table ? c.model.vocab_size * h / tp : 0);
  return shape;
}

int64_t recomputed_blocks(const config::Config& config, int64_t stage_layers) {
  if (config.training.recompute != "full") return 0;
  const int64_t first = config.training.recompute_layers;
  return first == 0 ? stage_layers : std::min(stage_layers, first);
}

std::vector<MessageClass> step_traffic(const config::Config& c, const parallel::ParallelDims& dims,
                                       int stage) {
  const StageShape shape = stage_shape(c, dims, stage);
  const int64_t micro_batches = c.training.global_batch / (c.training.micro_batch * dims.dp);
  const int64_t activation_bytes =
      c.training.micro_batch * c.model.seq_len * c.model.hidden * int64_t(sizeof(float));
  std::vector<MessageClass> out;
  auto add = [&](MessageClass m) {
    if (m.calls > 0 && m.group_size > 1) out.push_back(m);
  };

  // Gradients over dp in buckets of parallel.dp_bucket_bytes, cut as
  // parallel::ZeroLayout cuts them: the untied token embedding in buckets of
  // its own (role embedding_gradient), the rest of the stage after it.
  const int zero = dims.zero_stage;
  const int64_t table = c.model.vocab_size * c.model.hidden / dims.tp;
  const bool own_embedding = !c.model.tie_embeddings && shape.has_embedding;
  std::vector<ParameterRun> runs;
  if (own_embedding) runs.push_back({table, true});
  runs.push_back({shape.parameters - (own_embedding ? table : 0), false});
  const bool per_layer = zero == 3 && c.parallel.zero3_gather == "layer";
  if (per_layer) {
    // Buckets per unit (parallel::ZeroLayout with units): reduce-scattered
    // once per step; each unit gathered as often as the layer rules say.
    const StageUnits units =
        layer_units(c, dims, stage, shape, block_parameters(c, dims.tp), micro_batches);
    std::map<std::pair<bool, int64_t>, int64_t> reduced;  // (own, bucket floats) -> calls
    std::map<int64_t, int64_t> gathered;                  // bucket floats -> calls
    for (const GatherUnit& unit : units.units)
      for (const GatherBucket& bucket : unit.buckets) {
        ++reduced[{bucket.own, bucket.floats}];
        gathered[bucket.floats] += unit.gathers;
      }
    for (const auto& [key, calls] : reduced) {
      const auto& [own, floats] = key;
      MessageClass grads{GroupKind::kZero, Op::kReduceScatter,
                         own ? Role::kEmbeddingGradient : Role::kGradient};
      grads.calls = calls;
      grads.bytes = floats * int64_t(sizeof(float));
      grads.group_size = dims.dp;
      grads.sent_fraction = ring_share_fraction(dims.dp);
      grads.overlaps_backward = c.training.overlap_grad_reduce;
      add(grads);
    }
    for (const auto& [floats, calls] : gathered) {
      MessageClass weights{GroupKind::kZero, Op::kAllgather, Role::kWeight};
      weights.calls = calls;
      weights.bytes = floats * int64_t(sizeof(float));
      weights.group_size = dims.dp;
      weights.sent_fraction = ring_share_fraction(dims.dp);
      weights.prefetched_per_layer = true;
      add(weights);
    }
  } else {
    std::map<std::pair<bool, int64_t>, int64_t> buckets;  // (own, bucket floats) -> calls
    for (const GatherBucket& bucket : zero_unit(runs, dims.dp, c.parallel.dp_bucket_bytes).buckets)
      ++buckets[{bucket.own, bucket.floats}];
    // ZeRO 1-3 reduce-scatter over zero (half an allreduce's bytes), ZeRO-0
    // allreduces over dp (a powersgd rule, which keeps ZeRO-1 on the
    // allreduce, is not modelled). ZeRO-1 keeps the allreduce for the
    // embedding's own buckets where the dp policy sends them block-sparse.
    const comm::Policy policy(c.compression);
    for (const auto& [key, calls] : buckets) {
      const auto& [own, floats] = key;
      bool scatter = zero >= 1;
      if (zero == 1 && own) {
        const comm::Plan route = policy.plan(GroupKind::kDp, Op::kAllreduce,
                                             Role::kEmbeddingGradient, size_t(floats) * 4);
        scatter = route.raw() || route.codec->name() != "block_sparse";
      }
      MessageClass grads{scatter ? GroupKind::kZero : GroupKind::kDp,
                         scatter ? Op::kReduceScatter : Op::kAllreduce,
                         own ? Role::kEmbeddingGradient : Role::kGradient};
      grads.calls = calls;
      grads.bytes = floats * int64_t(sizeof(float));
      grads.group_size = dims.dp;
      grads.sent_fraction =
          scatter ? ring_share_fraction(dims.dp) : allreduce_fraction(grads.bytes, dims.dp);
      grads.overlaps_backward = c.training.overlap_grad_reduce;
      add(grads);
      if (zero >= 1) {
        MessageClass weights{GroupKind::kZero, Op::kAllgather, Role::kWeight};
        weights.calls = calls;
        weights.bytes = grads.bytes;
        weights.group_size = dims.dp;
        weights.sent_fraction = ring_share_fraction(dims.dp);
        add(weights);
      }
    }
  }
  if (zero >= 1) {
    // The gradient norm's sums of squares over the pieces (two floats).
    MessageClass norm{GroupKind::kZero, Op::kAllreduce,
                      Role::kOther,     1,
                      sizeof(double),   allreduce_fraction(sizeof(double), dims.dp),
                      dims.dp};
    add(norm);
  }
  MessageClass loss{GroupKind::kDp, Op::kAllreduce,
                    Role::kOther,   1,
                    sizeof(float),  allreduce_fraction(4, dims.dp),
                    dims.dp};
  add(loss);

  // Tensor parallelism, per micro-batch.
  // A block recomputed whole sends its two forward allreduces again.
  int64_t tp_activations =
      2 * shape.layers + (shape.has_embedding ? 1 : 0) + 2 * recomputed_blocks(c, shape.layers);
  MessageClass tp_forward{GroupKind::kTp, Op::kAllreduce, Role::kActivation};
  tp_forward.calls = tp_activations * micro_batches;
  tp_forward.bytes = activation_bytes;
  tp_forward.group_size = dims.tp;
  tp_forward.sent_fraction = allreduce_fraction(activation_bytes, dims.tp);
  tp_forward.per_micro_batch = true;
  add(tp_forward);
  MessageClass tp_backward = tp_forward;
  tp_backward.role = Role::kActivationGrad;
  // Two column-parallel inputs per block, and the head's input (the tied
  // output projection is column-parallel over the vocabulary).
  tp_backward.calls = (2 * shape.layers + (shape.has_head ? 1 : 0)) * micro_batches;
  add(tp_backward);
  if (shape.has_head) {
    // Vocab-parallel cross entropy: each rank's per-token (max, sum-exp,
    // target logit) gathered over tp.
    MessageClass stats{GroupKind::kTp, Op::kAllgather, Role::kActivation};
    stats.calls = micro_batches;
    stats.bytes = c.training.micro_batch * c.model.seq_len * 3 * int64_t(sizeof(float)) * dims.tp;
    stats.group_size = dims.tp;
    stats.sent_fraction = ring_share_fraction(dims.tp);
    stats.per_micro_batch = true;
    add(stats);
  }
  MessageClass tp_norm{GroupKind::kTp, Op::kAllreduce,
                       Role::kOther,   1,
                       sizeof(float),  allreduce_fraction(4, dims.tp),
                       dims.tp};
  add(tp_norm);

  // Pipeline parallelism.
  if (dims.pp > 1) {
    MessageClass sends{GroupKind::kPp, Op::kSendRecv, Role::kActivation};
    sends.calls = micro_batches * ((stage + 1 < dims.pp ? 1 : 0) + (stage > 0 ? 1 : 0));
    sends.bytes = activation_bytes;
    sends.group_size = dims.pp;
    sends.per_micro_batch = true;
    add(sends);
    if (c.model.tie_embeddings && (shape.has_embedding || shape.has_head)) {
      MessageClass tied{GroupKind::kPp, Op::kAllreduce, Role::kGradient};
      tied.calls = 1;
      tied.bytes = c.model.vocab_size * c.model.hidden / dims.tp * int64_t(sizeof(float));
      tied.group_size = 2;
      tied.sent_fraction = allreduce_fraction(tied.bytes, 2);
      add(tied);
    }
    MessageClass loss_bcast{GroupKind::kPp, Op::kBroadcast,
                            Role::kOther,   1,
                            sizeof(float),  chain_broadcast_fraction(stage, dims.pp - 1, dims.pp),
                            dims.pp};
    add(loss_bcast);
    MessageClass pp_norm{GroupKind::kPp, Op::kAllreduce,
                         Role::kOther,   1,
                         sizeof(float),  allreduce_fraction(4, dims.pp, stage),
                         dims.pp};
    add(pp_norm);
  }
  return out;
}

}  // namespace cmpi::plan
