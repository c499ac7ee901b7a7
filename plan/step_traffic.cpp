#include "plan/step_traffic.h"

#include <algorithm>
#include <map>

#include "comm/policy.h"
#include "models/family/gpt_family.h"
#include "parallel/pipeline/pipeline_schedule.h"
#include "parallel/pipeline/pipeline_stages.h"
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
double allreduce_fraction(int64_t bytes, int n, int rank = 0, int64_t word_bytes = 4) {
  if (n < 2 || bytes <= 0) return 0.0;
  const int64_t elems = bytes / word_bytes;
  auto segment = [&](int j) { return elems / n + (j < elems % n ? 1 : 0); };
  return double(2 * elems - segment(rank) - segment((rank + 1) % n)) * double(word_bytes) /
         double(bytes);
}

// The ranks the dp and zero groups span: dp x cp (parallel::kGroupSpans).
int dp_group(const parallel::ParallelDims& dims) {
  return dims.dp * dims.cp;
}

// The positions of each sequence a rank holds: 1/cp of them.
int64_t local_seq_len(const config::Config& c, const parallel::ParallelDims& dims) {
  return c.model.seq_len / dims.cp;
}

// The learned position table's elements (replicated); none with rotary
// positions.
int64_t position_table(const config::Config& c) {
  return c.model.position == "learned" ? c.model.seq_len * c.model.hidden : 0;
}

// The stage's parameters in models::Gpt's registration order, each with the
// bucket kind parallel::ZeroOptimizer gives it (ZeroLayout merges
// consecutive ones of a kind into runs): exact when replicated over tp > 1;
// alone the untied token embedding (own) and the tied table on a pipeline
// end (tied).
struct StageParameters {
  std::vector<ParameterRun> embedding;  // token table, position table (either may be absent)
  std::vector<ParameterRun> block;      // one transformer block
  std::vector<ParameterRun> head;       // final norm, the untied output table
};

// Elements of one tp rank's slice of the token table (and the untied head's):
// the padded vocabulary's rows (models/gpt_options.h) over tp.
int64_t table_slice(const config::Config& c, int64_t tp) {
  return models::gpt_options(c.model).padded_vocab_size(tp) * c.model.hidden / tp;
}

StageParameters stage_parameters(const config::Config& c, const parallel::ParallelDims& dims,
                                 const StageShape& shape) {
  const int64_t tp = dims.tp;
  const int64_t table = table_slice(c, tp);
  const bool tied = c.model.tie_embeddings, replicated = tp > 1;
  const bool tied_pp_end = tied && dims.pp > 1;
  StageParameters p;
  if (shape.has_embedding || (shape.has_head && tied))
    p.embedding.push_back({table, !tied && shape.has_embedding, tied_pp_end, false});
  if (shape.has_embedding) p.embedding.push_back({position_table(c), false, false, replicated});
  // The block's parameters in order, adjacent ones of one kind (split over
  // tp, or replicated) in one run, as ZeroLayout breaks buckets between them:
  // GPT-2's ln1, attention (qkv weight and bias, out weight | out bias), ln2,
  // fc_in weight and bias, fc_out weight | fc_out bias.
  for (const auto& param : models::gpt_options(c.model).block_parameters(tp)) {
    const bool run_replicated = replicated && param.replicated;
    if (!p.block.empty() && p.block.back().exact == run_replicated)
      p.block.back().elements += param.elements;
    else
      p.block.push_back({param.elements, false, false, run_replicated});
  }
  if (shape.has_head)
    p.head.push_back({models::gpt_options(c.model).norm_parameters(), false, false, replicated});
  if (shape.has_head && !tied) p.head.push_back({table, false, false, false});
  return p;
}

// Per-layer ZeRO-3's units and uses on `stage`, as models::Gpt's
// layer_schedule() cuts them, with their gathers over one step counted.
StageUnits layer_units(const config::Config& c, const parallel::ParallelDims& dims, int stage,
                       const StageShape& shape, int64_t micro_batches) {
  const bool tied = c.model.tie_embeddings;
  const StageParameters params = stage_parameters(c, dims, shape);
  StageUnits units;
  const auto add_unit = [&](const std::vector<ParameterRun>& runs) {
    units.units.push_back(zero_unit(runs, dp_group(dims), c.parallel.dp_bucket_bytes));
    return units.units.size() - 1;
  };
  size_t embedding = 0;
  if (!params.embedding.empty()) embedding = add_unit(params.embedding);
  if (shape.has_embedding) units.uses.push_back({embedding});
  for (int64_t l = 0; l < shape.layers; ++l) units.uses.push_back({add_unit(params.block)});
  if (shape.has_head && tied) units.uses.push_back({add_unit(params.head), embedding});
  if (shape.has_head && !tied) units.uses.push_back({add_unit(params.head)});
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
  // Column-parallel weights and biases split over tp; the norms and the
  // row-parallel layers' biases are replicated (models/transformer_block.cpp).
  int64_t elements = 0;
  for (const auto& param : models::gpt_options(c.model).block_parameters(tp))
    elements += param.elements;
  return elements;
}

}  // namespace

StageShape stage_shape(const config::Config& c, const parallel::ParallelDims& dims, int stage) {
  const auto s =
      parallel::stage_of(c.model.layers, dims.pp, stage, models::gpt_stage_layers(c, dims));
  const int64_t h = c.model.hidden, tp = dims.tp;
  const int64_t per_block = block_parameters(c, tp);
  StageShape shape;
  shape.stage = stage;
  shape.layers = s.layers();
  shape.has_embedding = s.has_embedding;
  shape.has_head = s.has_head;
  shape.parameters = s.layers() * per_block;
  if (s.has_embedding) shape.parameters += table_slice(c, tp) + position_table(c);
  // The head's table: tied, the embedding's (a copy on a head-only stage);
  // untied, its own.
  const bool own_head_table = !c.model.tie_embeddings || !s.has_embedding;
  if (s.has_head) shape.parameters += 2 * h + (own_head_table ? table_slice(c, tp) : 0);
  return shape;
}

int64_t recomputed_blocks(const config::Config& config, int64_t stage_layers) {
  if (config.training.recompute != "full") return 0;
  const int64_t first = config.training.recompute_layers;
  return first == 0 ? stage_layers : std::min(stage_layers, first);
}

namespace {

// Bytes a value of the forward tp sums (parallel.tp_forward_sum): float32,
// or the compute dtype's 2 under 16-bit compute with `compute`.
int forward_sum_word_bytes(const config::Config& c) {
  return c.parallel.tp_forward_sum == "compute" && c.training.precision != config::Precision::kFp32
             ? 2
             : 4;
}

// The activations' tp collectives without sequence parallelism: allreduces
// after the row-parallel layers and the embedding (a block recomputed whole
// sends its two forward allreduces again), and backward before the
// column-parallel layers and the head.
std::vector<MessageClass> tensor_parallel_traffic(const config::Config& c,
                                                  const parallel::ParallelDims& dims,
                                                  const StageShape& shape, int64_t micro_batches) {
  // Activation gradients travel in the compute dtype
  // (parallel/tensor/tensor_parallel_ops.cpp); the forward sums (the row-parallel
  // layers' partial products and the vocab-parallel embedding's rows) are
  // float32, or in the compute dtype with parallel.tp_forward_sum: compute.
  const int word_bytes = config::value_bytes(c.training.precision);
  const int sum_word_bytes = forward_sum_word_bytes(c);
  const int64_t elems = c.training.micro_batch * local_seq_len(c, dims) * c.model.hidden;
  const int64_t sum_bytes = elems * sum_word_bytes, grad_bytes = elems * word_bytes;
  const int64_t tp_activations =
      2 * shape.layers + (shape.has_embedding ? 1 : 0) + 2 * recomputed_blocks(c, shape.layers);
  MessageClass forward{GroupKind::kTp, Op::kAllreduce, Role::kActivation};
  forward.calls = tp_activations * micro_batches;
  forward.bytes = sum_bytes;
  forward.word_bytes = sum_word_bytes;
  forward.group_size = dims.tp;
  forward.sent_fraction = allreduce_fraction(sum_bytes, dims.tp, 0, sum_word_bytes);
  forward.per_micro_batch = true;
  MessageClass backward = forward;
  backward.role = Role::kActivationGrad;
  backward.bytes = grad_bytes;
  backward.sent_fraction = allreduce_fraction(grad_bytes, dims.tp, 0, word_bytes);
  backward.word_bytes = word_bytes;
  // Two column-parallel inputs per block (a gated MLP's gate and up
  // projections share one: ColumnParallelLinearImpl::forward_with), and the
  // head's input (the tied output projection is column-parallel over the
  // vocabulary).
  const int64_t column_inputs = 2;
  backward.calls = (column_inputs * shape.layers + (shape.has_head ? 1 : 0)) * micro_batches;
  return {forward, backward};
}

// With sequence parallelism (parallel/tensor/sequence_parallel_ops.h) the same
// activations travel as reduce-scatters (after the row-parallel layers and
// the embedding; backward: all-gathers) and all-gathers (before the
// column-parallel layers and the head, forward and again in backward;
// backward: reduce-scatters), a block recomputed whole doing its forward
// four again; and the sequence regions' parameter gradients are summed
// exactly over tp once per micro-batch: per block its LayerNorms' weights
// and biases and the row-parallel biases (6 of hidden floats), the final
// LayerNorm's 2, the position table.
std::vector<MessageClass> sequence_parallel_traffic(const config::Config& c,
                                                    const parallel::ParallelDims& dims,
                                                    const StageShape& shape,
                                                    int64_t micro_batches) {
  // Each collective carries the dtype it is given
  // (parallel/tensor/sequence_parallel_ops.cpp): the forward reduce-scatters sum
  // float32 partial products (and the embedding's float32 rows), so their
  // backward all-gathers carry float32 gradients — both in the compute
  // dtype with parallel.tp_forward_sum: compute; the gathered linears'
  // inputs are LayerNorm outputs in the compute dtype, and so are the
  // gradients their backward reduce-scatters.
  const int64_t elems = c.training.micro_batch * local_seq_len(c, dims) * c.model.hidden;
  const int compute_word_bytes = config::value_bytes(c.training.precision);
  const int sum_word_bytes = forward_sum_word_bytes(c);
  const int64_t blocks = shape.layers, recomputed = recomputed_blocks(c, shape.layers);
  const int64_t embedding = shape.has_embedding ? 1 : 0, head = shape.has_head ? 1 : 0;
  const auto collective = [&](Op op, Role role, int64_t calls, int word_bytes) {
    MessageClass m{GroupKind::kTp, op, role};
    m.calls = calls * micro_batches;
    m.bytes = elems * word_bytes;
    m.word_bytes = word_bytes;
    m.group_size = dims.tp;
    m.sent_fraction = ring_share_fraction(dims.tp);
    m.per_micro_batch = true;
    return m;
  };
  const auto exact_sum = [&](int64_t calls, int64_t floats) {
    MessageClass m{GroupKind::kTp, Op::kAllreduce, Role::kGradient};
    m.calls = calls * micro_batches;
    m.bytes = floats * int64_t(sizeof(float));
    m.group_size = dims.tp;
    m.sent_fraction = allreduce_fraction(m.bytes, dims.tp);
    m.per_micro_batch = true;
    return m;
  };
  const int64_t h = c.model.hidden;
  // Per block: the gathered (column-parallel) inputs — qkv's and the MLP's
  // (a gated MLP's gate and up projections gather theirs once) — and the
  // replicated hidden-sized parameters (norm weights and biases,
  // row-parallel biases).
  const models::GptOptions o = models::gpt_options(c.model);
  const int64_t gathered = 2;
  int64_t replicated = 0;
  for (const auto& param : o.block_parameters(dims.tp)) replicated += param.replicated ? 1 : 0;
  const int64_t head_norm = o.norm_parameters() / h;
  std::vector<MessageClass> out = {
      collective(Op::kReduceScatter, Role::kActivation, 2 * blocks + embedding + 2 * recomputed,
                 sum_word_bytes),
      collective(Op::kAllgather, Role::kActivation,
                 2 * (gathered * blocks + head) + gathered * recomputed, compute_word_bytes),
      collective(Op::kAllgather, Role::kActivationGrad, 2 * blocks + embedding, sum_word_bytes),
      collective(Op::kReduceScatter, Role::kActivationGrad, gathered * blocks + head,
                 compute_word_bytes),
      exact_sum(replicated * blocks + head_norm * head, h)};
  if (shape.has_embedding && c.model.position == "learned")
    out.push_back(exact_sum(1, c.model.seq_len * h));
  return out;
}

// The ring attention's messages (parallel/context/ring_attention.h), per
// block and micro-batch on the cp group: forward sends the key and value
// blocks cp - 1 hops (a block recomputed whole does it again in backward),
// backward sends them cp - 1 hops again in the compute dtype and their
// float32 gradient accumulators cp hops. A block holds this tp rank's
// key/value heads for the rank's seq_len / cp positions.
std::vector<MessageClass> context_parallel_traffic(const config::Config& c,
                                                   const parallel::ParallelDims& dims,
                                                   const StageShape& shape, int64_t micro_batches) {
  if (dims.cp < 2 || shape.layers == 0) return {};
  const models::GptOptions o = models::gpt_options(c.model);
  const int64_t elems =
      c.training.micro_batch * local_seq_len(c, dims) * o.kv_head_count() / dims.tp * o.head_dim();
  const int word_bytes = config::value_bytes(c.training.precision);
  const int64_t hops = dims.cp - 1;
  const auto sends = [&](Role role, int64_t calls, int bytes_per_value) {
    MessageClass m{GroupKind::kCp, Op::kSendRecv, role};
    m.calls = calls * micro_batches;
    m.bytes = elems * bytes_per_value;
    m.word_bytes = bytes_per_value;
    m.group_size = dims.cp;
    m.per_micro_batch = true;
    return m;
  };
  const int64_t blocks = shape.layers, recomputed = recomputed_blocks(c, shape.layers);
  return {sends(Role::kActivation, 2 * hops * (2 * blocks + recomputed), word_bytes),
          sends(Role::kActivationGrad, 2 * dims.cp * blocks, 4)};
}

}  // namespace

std::vector<MessageClass> step_traffic(const config::Config& c, const parallel::ParallelDims& dims,
                                       int stage) {
  const StageShape shape = stage_shape(c, dims, stage);
  // The dp and zero groups span dp x cp ranks (parallel::kGroupSpans).
  const int dp = dp_group(dims);
  const int64_t micro_batches = c.training.global_batch / (c.training.micro_batch * dims.dp);
  // Pipeline messages travel in the compute dtype
  // (PipelineEngine::set_wire_dtype).
  const int activation_word_bytes = config::value_bytes(c.training.precision);
  const int64_t activation_elems = c.training.micro_batch * local_seq_len(c, dims) * c.model.hidden;
  const int64_t activation_bytes = activation_elems * activation_word_bytes;
  std::vector<MessageClass> out;
  auto add = [&](MessageClass m) {
    if (m.calls > 0 && m.group_size > 1) out.push_back(m);
  };

  // Gradients over dp in buckets of parallel.dp_bucket_bytes, cut as
  // parallel::ZeroLayout cuts them: the untied token embedding in buckets of
  // its own (role embedding_gradient), tp-replicated parameters in buckets
  // of their own (summed exactly: the same calls and bytes), the tied table
  // on a pipeline end in buckets of its own, which only the first stage
  // reduces (the last takes the result over pp, below).
  const int zero = dims.zero_stage;
  const bool diloco = c.parallel.dp_sync == "diloco";  // ZeRO 0 only
  const bool tied_here =
      c.model.tie_embeddings && dims.pp > 1 && (shape.has_embedding || shape.has_head);
  const bool tied_reduced_here = tied_here && shape.has_embedding;
  std::map<int64_t, int64_t> tied_parts;  // the tied table's buckets: floats -> calls
  const StageParameters params = stage_parameters(c, dims, shape);
  std::vector<ParameterRun> runs = params.embedding;
  for (int64_t l = 0; l < shape.layers; ++l)
    runs.insert(runs.end(), params.block.begin(), params.block.end());
  runs.insert(runs.end(), params.head.begin(), params.head.end());
  const bool per_layer = zero == 3 && c.parallel.zero3_gather == "layer";
  // parallel.zero_gradient_memory: shard reduce-scatters every micro-batch's
  // buckets, except the tied table's, packed once in step().
  const bool shard_only = zero >= 2 && c.parallel.zero_gradient_memory == "shard";
  const auto reductions = [&](const GatherBucket& bucket) {
    return shard_only && !bucket.tied ? micro_batches : int64_t(1);
  };
  if (per_layer) {
    // Buckets per unit (parallel::ZeroLayout with units): reduce-scattered
    // once per step; each unit gathered as often as the layer rules say.
    const StageUnits units = layer_units(c, dims, stage, shape, micro_batches);
    std::map<std::pair<bool, int64_t>, int64_t> reduced;  // (own, bucket floats) -> calls
    std::map<int64_t, int64_t> gathered;                  // bucket floats -> calls
    for (const GatherUnit& unit : units.units)
      for (const GatherBucket& bucket : unit.buckets) {
        if (bucket.tied) ++tied_parts[bucket.floats];
        if (!bucket.tied || tied_reduced_here)
          reduced[{bucket.own, bucket.floats}] += reductions(bucket);
        gathered[bucket.floats] += unit.gathers;
      }
    for (const auto& [key, calls] : reduced) {
      const auto& [own, floats] = key;
      MessageClass grads{GroupKind::kZero, Op::kReduceScatter,
                         own ? Role::kEmbeddingGradient : Role::kGradient};
      grads.calls = calls;
      grads.bytes = floats * int64_t(sizeof(float));
      grads.group_size = dp;
      grads.sent_fraction = ring_share_fraction(dp);
      grads.overlaps_backward = c.training.overlap_grad_reduce;
      add(grads);
    }
    for (const auto& [floats, calls] : gathered) {
      MessageClass weights{GroupKind::kZero, Op::kAllgather, Role::kWeight};
      weights.calls = calls;
      weights.bytes = floats * int64_t(sizeof(float));
      weights.group_size = dp;
      weights.sent_fraction = ring_share_fraction(dp);
      weights.prefetched_per_layer = true;
      add(weights);
    }
  } else {
    // (own, bucket floats) -> calls; the tied table's buckets the last stage
    // does not reduce are gathered all the same.
    std::map<std::pair<bool, int64_t>, int64_t> buckets, not_reduced, reduced_calls;
    for (const GatherBucket& bucket :
         zero_unit(runs, dp_group(dims), c.parallel.dp_bucket_bytes).buckets) {
      if (bucket.tied) ++tied_parts[bucket.floats];
      const bool reduced = !bucket.tied || tied_reduced_here;
      ++(reduced ? buckets : not_reduced)[{bucket.own, bucket.floats}];
      if (reduced) reduced_calls[{bucket.own, bucket.floats}] += reductions(bucket);
    }
    for (const auto& [key, calls] : not_reduced) {
      if (zero == 0) continue;
      MessageClass weights{GroupKind::kZero, Op::kAllgather, Role::kWeight};
      weights.calls = calls;
      weights.bytes = key.second * int64_t(sizeof(float));
      weights.group_size = dp;
      weights.sent_fraction = ring_share_fraction(dp);
      add(weights);
    }
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
      grads.calls = reduced_calls[key];
      grads.bytes = floats * int64_t(sizeof(float));
      grads.group_size = dp;
      grads.sent_fraction = scatter ? ring_share_fraction(dp) : allreduce_fraction(grads.bytes, dp);
      grads.overlaps_backward = c.training.overlap_grad_reduce;
      if (diloco) {
        // Between syncs nothing crosses dp; the sync runs after the step.
        grads.role = Role::kPseudoGradient;
        grads.overlaps_backward = false;
        grads.every_steps = c.parallel.diloco.sync_every;
      }
      add(grads);
      if (zero >= 1) {
        MessageClass weights{GroupKind::kZero, Op::kAllgather, Role::kWeight};
        weights.calls = calls;
        weights.bytes = grads.bytes;
        weights.group_size = dp;
        weights.sent_fraction = ring_share_fraction(dp);
        add(weights);
      }
    }
  }
  if (zero >= 1) {
    // The gradient norm's sums of squares over the pieces (two floats).
    MessageClass norm{GroupKind::kZero,
                      Op::kAllreduce,
                      Role::kOther,
                      1,
                      sizeof(double),
                      allreduce_fraction(sizeof(double), dp),
                      dp};
    add(norm);
  }
  MessageClass loss{GroupKind::kDp,
                    Op::kAllreduce,
                    Role::kOther,
                    1,
                    sizeof(float),
                    allreduce_fraction(4, dp),
                    dp};
  add(loss);

  // Tensor parallelism, per micro-batch.
  if (c.parallel.sequence_parallel && dims.tp > 1)
    for (const MessageClass& m : sequence_parallel_traffic(c, dims, shape, micro_batches)) add(m);
  else
    for (const MessageClass& m : tensor_parallel_traffic(c, dims, shape, micro_batches)) add(m);
  if (shape.has_head) {
    // Vocab-parallel cross entropy: each rank's per-token (max, sum-exp,
    // target logit) gathered over tp.
    MessageClass stats{GroupKind::kTp, Op::kAllgather, Role::kActivation};
    stats.calls = micro_batches;
    stats.bytes =
        c.training.micro_batch * local_seq_len(c, dims) * 3 * int64_t(sizeof(float)) * dims.tp;
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

  // Context parallelism, per micro-batch.
  for (const MessageClass& m : context_parallel_traffic(c, dims, shape, micro_batches)) add(m);

  // Pipeline parallelism.
  if (dims.pp > 1) {
    MessageClass sends{GroupKind::kPp, Op::kSendRecv, Role::kActivation};
    sends.calls = micro_batches * ((stage + 1 < dims.pp ? 1 : 0) + (stage > 0 ? 1 : 0));
    // Sequence parallel: the tp rank's part of the sequence.
    sends.bytes = c.parallel.sequence_parallel ? activation_bytes / dims.tp : activation_bytes;
    sends.word_bytes = activation_word_bytes;
    sends.group_size = dims.pp;
    sends.per_micro_batch = true;
    add(sends);
    if (tied_here) {
      // The last stage sends its table's gradient to the first; the first
      // broadcasts each reduced bucket back (at ZeRO 1-3 only its piece).
      if (!shape.has_embedding) {
        MessageClass gather{GroupKind::kPp, Op::kSendRecv, Role::kGradient};
        gather.calls = 1;
        gather.bytes = table_slice(c, dims.tp) * int64_t(sizeof(float));
        gather.group_size = 2;
        add(gather);
      }
      for (const auto& [floats, calls] : tied_parts) {
        MessageClass share{GroupKind::kPp, Op::kBroadcast, Role::kGradient};
        share.calls = calls;
        share.bytes = (zero == 0 ? floats : floats / dp) * int64_t(sizeof(float));
        share.group_size = 2;
        share.sent_fraction = shape.has_embedding ? 1.0 : 0.0;  // the chain's root, or its end
        add(share);
        if (diloco) {
          // The summed pseudo-gradient of the table, handed over likewise.
          share.role = Role::kPseudoGradient;
          share.bytes = floats * int64_t(sizeof(float));
          share.every_steps = c.parallel.diloco.sync_every;
          add(share);
        }
      }
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
