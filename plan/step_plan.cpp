#include "plan/step_plan.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "comm/adaptive_model.h"
#include "comm/policy.h"
#include "models/family/gpt_family.h"
#include "models/family/model_family.h"
#include "plan/device_compute.h"
#include "plan/model_flops.h"
#include "plan/ring_overlap.h"

namespace cmpi::plan {
namespace {

using comm::GroupKind;
using comm::Op;

// One message class through one route, per step.
struct MessageCost {
  double ratio = 1;          // wire bytes / raw bytes
  double rel_error = 0;      // the codec's, on the probe's data
  double codec_seconds = 0;  // encode + decode of every byte sent
  double fill_seconds = 0;   // one chunk's codec time per call (the pipeline's fill)
  double seconds = 0;        // latency + max(wire, codec) + fill
};

// Preset auto's route for a message class: the candidate of its adaptive
// rule that the decision model would pick on these numbers, i.e. the fastest
// by `price` (a callable: codec spec or nullptr for raw -> MessageCost) among
// those within the error budget; raw, first, wins ties. `name` says which.
template <class Price>
MessageCost cheapest_auto_candidate(const comm::PolicyRule& rule,
                                    const comm::AutoSettings& settings, const Price& price,
                                    std::string& name) {
  MessageCost best = price(nullptr);
  name = "auto: raw";
  for (const comm::AutoCandidate& candidate : rule.candidates) {
    if (!candidate.codec) continue;
    const MessageCost cost = price(&*candidate.codec);
    comm::CandidateKind kind;
    kind.lossless = cost.rel_error == 0;
    kind.error_feedback = candidate.error_feedback;
    comm::CandidateMeasure measure;
    measure.measured = true;
    measure.rel_error = cost.rel_error;
    if (!comm::within_error_budget(kind, measure, settings) || cost.seconds >= best.seconds)
      continue;
    best = cost;
    name =
        "auto: " + candidate.codec->to_string() + (candidate.error_feedback ? " + feedback" : "");
  }
  return best;
}

int latency_rounds(Op op, int n) {
  switch (op) {
    case Op::kAllreduce:
      return 2 * (n - 1);
    case Op::kReduceScatter:
    case Op::kAllgather:
      return n - 1;
    case Op::kBroadcast:
      return int(std::ceil(std::log2(double(n))));
    default:
      return 1;
  }
}

// Whether the group of `kind` that contains the rank at (0, ..., pp stage)
// sits on one node: its members vary along the group's mesh dimension (a
// copy's source for zero; every rank for the world group) and the
// dimensions its group also spans (dp: cp).
bool group_is_intra_node(GroupKind kind, const parallel::ParallelDims& dims, int stage,
                         int ranks_per_node) {
  const parallel::MeshDimInfo* varying = parallel::mesh_dim_of(kind);
  std::vector<int> members;
  if (varying == nullptr) {
    for (int r = 0; r < dims.world_size(); ++r) members.push_back(r);
  } else {
    const parallel::MeshDimInfo* also = nullptr;
    for (const parallel::GroupSpan& span : parallel::kGroupSpans)
      if (span.dim == varying->dim) also = &parallel::mesh_dim(span.also);
    parallel::GridCoord c;
    c.pp = stage;
    for (int i = 0; i < dims.*varying->size; ++i)
      for (int j = 0; j < (also ? dims.*also->size : 1); ++j) {
        c.*varying->coord = i;
        if (also) c.*also->coord = j;
        members.push_back(dims.rank_of(c));
      }
  }
  for (int r : members)
    if (r / ranks_per_node != members.front() / ranks_per_node) return false;
  return true;
}

// Ranks on the node of the rank at (0, ..., pp `stage`) that belong to the
// same pipeline stage: they run the stage's micro-batches in lockstep, so
// their dp, zero, tp and pp messages leave the node at the same time and
// share its uplink. (Ranks of other stages on the node send at other times.)
int ranks_sharing_uplink(const parallel::ParallelDims& dims, int stage, int ranks_per_node) {
  parallel::GridCoord first;
  first.pp = stage;
  const int node = dims.rank_of(first) / ranks_per_node;
  int sharing = 0;
  for (int r = 0; r < dims.world_size(); ++r)
    if (dims.coord_of(r).pp == stage && r / ranks_per_node == node) ++sharing;
  return std::max(1, sharing);
}

}  // namespace

namespace {

bool is_auto_block_sparse(const compress::CodecSpec& codec) {
  return codec.name() == "block_sparse" && codec.get_string("select", "auto") == "auto";
}

}  // namespace

StepPlan plan_step(const config::Config& c, const parallel::ParallelDims& dims,
                   const PlanOptions& o, CodecCostTable& codecs) {
  StepPlan plan;
  plan.preset = c.compression.preset;
  plan.precision = c.training.precision;
  plan.tp_forward_sum = c.parallel.tp_forward_sum;
  plan.dp_sync = c.parallel.dp_sync;
  plan.sync_every = c.parallel.diloco.sync_every;
  plan.fragments = c.parallel.diloco.fragments;
  plan.diloco_warmup_steps = c.parallel.diloco.warmup_steps;
  plan.dims = dims;
  plan.micro_batches = c.training.global_batch / (c.training.micro_batch * dims.dp);
  plan.memory = models::estimate_memory(c, dims);
  plan.pipeline_balance =
      c.parallel.stage_layers.empty() ? c.parallel.pipeline_balance : std::string("explicit");
  const std::vector<parallel::MemoryEstimate> stage_memory = models::estimate_stage_memory(c, dims);
  const comm::Policy policy(c.compression);
  // A rank computes its 1/cp of every sequence (context parallelism).
  const double tokens_per_micro_batch =
      double(c.training.micro_batch * c.model.seq_len) / double(dims.cp);
  const double m = double(plan.micro_batches);

  double slot_seconds = 0;  // the slowest stage's micro-batch (compute + blocking comm)
  int slot_stage = 0;       // the stage that sets it
  std::vector<double> per_step_seconds(size_t(dims.pp), 0.0);
  // Per stage and group: the blocking seconds of one micro-batch, and the
  // exposed seconds once per step, so the step can be split into its parts.
  std::vector<std::map<GroupKind, double>> blocking_by_group(size_t(dims.pp));
  std::vector<std::map<GroupKind, double>> per_step_by_group(size_t(dims.pp));
  // CPU seconds all ranks spend per step (compute and codecs), for the
  // time-sharing bound when the ranks share fewer cores than they are.
  double cpu_seconds_all_ranks = 0;
  const bool time_shared = o.cores > 0 && o.cores < double(o.world_size);
  plan.compute_stretch = time_shared && o.spinning_waits ? double(o.world_size) / o.cores : 1.0;
  const double ranks_per_stage = double(o.world_size) / double(dims.pp);
  for (int stage = 0; stage < dims.pp; ++stage) {
    StagePlan sp;
    sp.shape = stage_shape(c, dims, stage);
    sp.memory = stage_memory[size_t(stage)];
    plan.stage_layers.push_back(sp.shape.layers);
    double forward_cpu_seconds = 0, recompute_cpu_seconds = 0;
    // Context parallelism: the ring's hops hide behind the attention of one
    // pair of chunks at a time (plan/ring_overlap.h); a rank's attention
    // core covers its 2 query chunks against all 2·cp key chunks.
    RingBlock ring;
    ring.cp = dims.cp;
    const double chunk_pairs = 4.0 * double(dims.cp);
    if (o.on_device()) {
      // A GPU: each kernel at what its shape reaches (plan/device_compute.h),
      // slowed by what the software stack reaches of that (software_stack.h).
      // Under context parallelism each kernel runs on 1/cp of the queries
      // (the ring's blocks: the same arithmetic per token, in smaller GEMMs
      // whose efficiency is not re-read from the table).
      const DeviceMicroBatch t =
          device_micro_batch(c, sp.shape, dims.tp, *o.device, o.flash_attention);
      const double stack_slowdown = 1 / o.stack.kernel_efficiency;
      const double share = stack_slowdown / double(dims.cp);
      forward_cpu_seconds = t.forward_seconds * share;
      recompute_cpu_seconds = t.recompute_seconds * share;
      sp.forward_seconds = t.forward_seconds * share;
      sp.backward_seconds = t.backward_seconds * share;
      sp.optimizer_seconds = device_optimizer_seconds(sp.shape, dims, *o.device) * stack_slowdown;
      ring.pair_forward_seconds = t.core_seconds * share / chunk_pairs;
    } else {
      const double fwd = forward_flops_per_token(c, sp.shape, dims.tp) * tokens_per_micro_batch;
      forward_cpu_seconds = fwd / o.flops_per_second;
      sp.forward_seconds = forward_cpu_seconds * plan.compute_stretch;
      // Recomputation runs part of the forward again inside backward: whole
      // blocks (full) or the attention core's two matmuls (selective).
      const double recomputed_flops = recompute_flops_per_token(c, sp.shape, dims.tp);
      recompute_cpu_seconds = recomputed_flops * tokens_per_micro_batch / o.flops_per_second;
      sp.backward_seconds = 2 * sp.forward_seconds + recompute_cpu_seconds * plan.compute_stretch;
      ring.pair_forward_seconds = attention_core_flops_per_token(c, dims.tp) *
                                  tokens_per_micro_batch / o.flops_per_second *
                                  plan.compute_stretch / chunk_pairs;
    }

    std::map<GroupKind, GroupCost> groups;
    double blocking_per_micro_batch = 0, per_step = 0, dp_overlappable = 0, prefetched = 0;
    double codec_cpu_seconds = 0;
    int64_t dp_buckets = 0;
    bool ring_messages = false;
    const double uplink_share = double(ranks_sharing_uplink(dims, stage, o.ranks_per_node));
    for (const MessageClass& msg : step_traffic(c, dims, stage)) {
      const bool intra = group_is_intra_node(msg.group, dims, stage, o.ranks_per_node);
      const Link& link = intra ? o.intra : o.inter;
      const double efficiency =
          intra && o.intra_link_efficiency > 0 ? o.intra_link_efficiency : o.link_efficiency;
      const double share = intra ? 1.0 : uplink_share;
      const comm::Locality locality = intra ? comm::Locality::kIntra : comm::Locality::kInter;
      // 2-byte messages are words of the compute dtype (rules may match on it).
      const compress::WordType word = msg.word_bytes == 4 ? compress::WordType::kFloat32
                                      : c.training.precision == config::Precision::kBf16
                                          ? compress::WordType::kBFloat16
                                          : compress::WordType::kFloat16;
      comm::Plan route =
          policy.plan(msg.group, msg.op, msg.role, size_t(msg.bytes), locality, word);
      // A block-sparse `select: auto` route pays only on data sparse enough,
      // which the plan cannot know: it projects the dense fallback.
      while (!route.raw() && msg.op == comm::Op::kAllreduce && is_auto_block_sparse(*route.codec))
        route = policy.plan_after(route, msg.group, msg.op, msg.role, size_t(msg.bytes), locality,
                                  word);
      const double sent = msg.sent_bytes();
      // 16-bit words (msg.word_bytes 2) travel raw under identity or the
      // cast to their own type; mpc packs the words themselves (its measured
      // ratio carried over); any other codec runs on the words widened to
      // float, so its bytes per value are those measured on floats, twice
      // its ratio against the 16-bit bytes (comm/communicator_words16.cpp).
      const double widening = 4.0 / double(msg.word_bytes);
      const auto carries_raw = [&](const compress::CodecSpec& codec) {
        return msg.word_bytes == 2 && (codec.name() == "identity" ||
                                       codec.name() == config::name_of(c.training.precision));
      };
      const auto price = [&](const compress::CodecSpec* codec) {
        MessageCost cost;
        if (codec != nullptr && !carries_raw(*codec)) {
          const CodecCost& measured = codecs.cost(*codec);
          const double scale = codec->name() == "mpc" ? 1.0 : widening;
          cost.ratio = measured.ratio * scale;
          cost.rel_error = measured.rel_error;
          cost.codec_seconds =
              scale * (sent / measured.encode_bytes_per_s + sent / measured.decode_bytes_per_s);
          const double chunk = scale * std::min(double(route.chunk_bytes), double(msg.bytes));
          cost.fill_seconds =
              chunk / measured.encode_bytes_per_s + chunk / measured.decode_bytes_per_s;
        }
        const double wire_seconds =
            sent * cost.ratio * 8 / (link.bits_per_second * efficiency / share);
        // Calls per step on average (once every msg.every_steps steps).
        const double calls = double(msg.calls) / double(msg.every_steps);
        const double latency =
            calls * latency_rounds(msg.op, msg.group_size) * link.latency_seconds;
        cost.seconds =
            latency + std::max(wire_seconds, cost.codec_seconds) + cost.fill_seconds * calls;
        return cost;
      };
      std::string codec_name;
      MessageCost cost;
      const comm::PolicyRule* rule =
          route.rule >= 0 ? &policy.rules()[size_t(route.rule)] : nullptr;
      if (rule != nullptr && !rule->candidates.empty()) {
        cost = cheapest_auto_candidate(*rule, policy.config().auto_settings, price, codec_name);
      } else {
        cost = price(route.codec);
        codec_name = route.raw() ? "raw" : route.codec->to_string();
      }
      // A rank with less than a core spends only its share of it.
      codec_cpu_seconds += cost.codec_seconds * std::min(1.0, o.codec_scale);
      const double wire = sent * cost.ratio;
      const double seconds = cost.seconds;

      GroupCost& g = groups[msg.group];
      g.group = msg.group;
      g.locality = intra ? "intra" : "inter";
      g.calls += (msg.calls + msg.every_steps - 1) / msg.every_steps;  // per step, rounded up
      g.raw_bytes += sent;
      g.wire_bytes += wire;
      g.seconds += seconds;
      if (g.codecs.find(codec_name) == std::string::npos)
        g.codecs += (g.codecs.empty() ? "" : ", ") + codec_name;
      if (msg.group == GroupKind::kCp) {
        // The ring's hops: their exposed part is priced below, per hop.
        const double hops = double(msg.calls) / 2;  // keys and values, or their gradients
        RingHop& hop = msg.role == comm::Role::kActivation ? ring.keys_values : ring.gradients;
        hop.seconds = seconds / hops;
        hop.cpu_seconds = (cost.codec_seconds + cost.fill_seconds * double(msg.calls)) / hops;
        ring_messages = true;
      } else if (msg.prefetched_per_layer) {
        prefetched += seconds;
      } else if (msg.per_micro_batch) {
        blocking_per_micro_batch += seconds / m;
        blocking_by_group[size_t(stage)][msg.group] += seconds / m;
        g.exposed_seconds += seconds;
      } else if (msg.overlaps_backward) {
        dp_overlappable += seconds;
        dp_buckets += msg.calls;
      } else {
        per_step += seconds;
        per_step_by_group[size_t(stage)][msg.group] += seconds;
        g.exposed_seconds += seconds;
      }
    }
    if (ring_messages) {
      const double exposed =
          ring_exposed_seconds(ring, sp.shape.layers, recomputed_blocks(c, sp.shape.layers));
      blocking_per_micro_batch += exposed;
      blocking_by_group[size_t(stage)][GroupKind::kCp] += exposed;
      groups[GroupKind::kCp].exposed_seconds += exposed * m;
    }
    // Per-layer gathers hide behind the micro-batch's forward and backward.
    if (prefetched > 0) {
      const double exposed =
          std::max(0.0, prefetched / m - (sp.forward_seconds + sp.backward_seconds));
      blocking_per_micro_batch += exposed;
      blocking_by_group[size_t(stage)][GroupKind::kZero] += exposed;
      groups[GroupKind::kZero].exposed_seconds += exposed * m;
    }
    // All buckets but the last can hide behind the last micro-batch's
    // backward; with parallel.zero_gradient_memory: shard every micro-batch
    // reduces its own buckets behind its own backward (a round each).
    const bool every_backward = dims.zero_stage >= 2 && c.parallel.zero_gradient_memory == "shard";
    const double rounds = every_backward ? m : 1;
    double dp_exposed = dp_overlappable;
    if (double(dp_buckets) > rounds) {
      const double per_round = dp_overlappable / rounds;
      const double last = dp_overlappable / double(dp_buckets);
      dp_exposed = rounds * (last + std::max(0.0, per_round - last - sp.backward_seconds));
    }
    for (auto& [kind, g] : groups)
      if (kind == GroupKind::kDp || kind == GroupKind::kZero) {
        // Attribute the exposed bucket time to the group the buckets use.
        const bool buckets_here =
            (dims.zero_stage >= 1) == (kind == GroupKind::kZero) && dp_overlappable > 0;
        if (buckets_here) {
          g.exposed_seconds += dp_exposed;
          per_step_by_group[size_t(stage)][kind] += dp_exposed;
        }
      }
    per_step_seconds[size_t(stage)] = per_step + dp_exposed + sp.optimizer_seconds;
    cpu_seconds_all_ranks +=
        ranks_per_stage *
        (m * (3 * forward_cpu_seconds + recompute_cpu_seconds) + codec_cpu_seconds);
    const double slot = sp.forward_seconds + sp.backward_seconds + blocking_per_micro_batch;
    if (stage == 0 || slot > slot_seconds) {
      slot_seconds = slot;
      slot_stage = stage;
    }
    for (auto& [kind, g] : groups) sp.groups.push_back(g);
    plan.stages.push_back(std::move(sp));
  }
  const double slots = m + double(dims.pp - 1);
  plan.bubble_fraction = double(dims.pp - 1) / slots;
  // The step's parts, which add up to it: the slots of the stage that sets
  // the pipeline's pace (its compute, bubble included, and its blocking
  // messages) and the per-step messages of the stage that waits longest.
  const StagePlan& paced = plan.stages[size_t(slot_stage)];
  plan.compute_seconds = slots * (paced.forward_seconds + paced.backward_seconds);
  const auto per_step_stage =
      size_t(std::max_element(per_step_seconds.begin(), per_step_seconds.end()) -
             per_step_seconds.begin());
  const double per_step_exposed = per_step_seconds[per_step_stage];
  plan.step_seconds = slots * slot_seconds + per_step_exposed;
  // Fewer cores than ranks: the ranks time-share them, so a step takes at
  // least all ranks' CPU work spread over the cores, plus the communication
  // at the step's end during which no rank has work (the bubble and the
  // waits in between are filled by other ranks' work).
  plan.cpu_bound_seconds = 0;
  const bool cpu_bound =
      time_shared && cpu_seconds_all_ranks / o.cores + per_step_exposed > plan.step_seconds;
  if (time_shared) plan.cpu_bound_seconds = cpu_seconds_all_ranks / o.cores + per_step_exposed;
  if (cpu_bound) {
    plan.compute_seconds = cpu_seconds_all_ranks / o.cores;
    plan.step_seconds = plan.cpu_bound_seconds;
  }
  std::map<GroupKind, double> group_parts;
  if (!cpu_bound)  // CPU-bound, the blocking messages hide in other ranks' work
    for (const auto& [kind, seconds] : blocking_by_group[size_t(slot_stage)])
      group_parts[kind] += slots * seconds;
  for (const auto& [kind, seconds] : per_step_by_group[per_step_stage])
    group_parts[kind] += seconds;
  plan.parts.push_back({"compute", plan.compute_seconds});
  for (const auto& [kind, seconds] : group_parts)
    if (seconds > 0) plan.parts.push_back({comm::to_string(kind), seconds});
  const double optimizer = plan.stages[per_step_stage].optimizer_seconds;
  if (optimizer > 0) plan.parts.push_back({"optimizer", optimizer});
  const double tokens_per_step = double(c.training.global_batch * c.model.seq_len);
  plan.tokens_per_second = tokens_per_step / plan.step_seconds;
  plan.hardware_flops_per_rank = model_flops_per_token(c, dims).hardware_training() *
                                 tokens_per_step / plan.step_seconds / double(o.world_size);

  // The bound: the largest part of the step (compute wins ties).
  const StepPart* largest = &plan.parts[0];
  for (const StepPart& part : plan.parts)
    if (part.seconds > largest->seconds) largest = &part;
  plan.bound_by = largest->name;
  return plan;
}

}  // namespace cmpi::plan
