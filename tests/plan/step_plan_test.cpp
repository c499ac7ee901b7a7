// The planner's step model (plan/step_plan.h) and memory estimate
// (parallel/memory_estimate.h) on layouts whose answer follows from the model
// by hand: a node's uplink shared by the ranks of one stage, the time-sharing
// bound of ranks on fewer cores, the context ring's hops behind the
// attention of the block held, the optimizer state a rank holds, and the
// forward tp sums' bytes under parallel.tp_forward_sum.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "config/config.h"
#include "models/family/model_family.h"
#include "parallel/mesh/parallel_dims.h"
#include "plan/step_plan.h"
#include "plan/step_traffic.h"

namespace cmpi::plan {
namespace {

config::Config small_gpt() {
  config::Config c;
  c.model.vocab_size = 1024;
  c.model.seq_len = 128;
  c.model.layers = 4;
  c.model.hidden = 256;
  c.model.heads = 8;
  c.model.mlp_ratio = 4;
  c.training.micro_batch = 4;
  c.training.global_batch = 32;
  c.compression.preset = "none";
  c.parallel.dp_bucket_bytes = 4 << 20;
  return c;
}

parallel::ParallelDims layout(int dp, int tp, int pp, int zero = 0) {
  parallel::ParallelDims d;
  d.dp = dp;
  d.tp = tp;
  d.pp = pp;
  d.zero_stage = zero;
  return d;
}

PlanOptions options(const parallel::ParallelDims& d, int ranks_per_node) {
  PlanOptions o;
  o.world_size = d.dp * d.tp * d.pp;
  o.ranks_per_node = ranks_per_node;
  o.flops_per_second = 50e9;
  o.link_efficiency = 1;
  o.inter = {200e6, 0};
  o.intra = {1e15, 0};
  return o;
}

double group_seconds(const StepPlan& p, int stage, comm::GroupKind kind) {
  for (const GroupCost& g : p.stages[size_t(stage)].groups)
    if (g.group == kind) return g.seconds;
  return 0;
}

TEST(StepPlan, RanksOfOneStageOnANodeShareItsUplinkForPipelineSends) {
  // dp2 x pp2, two ranks per node: node 0 holds both dp replicas of stage 0,
  // which send their activations to stage 1 at the same time.
  const auto c = small_gpt();
  const auto d = layout(2, 1, 2);
  CodecCostTable codecs;
  const StepPlan shared = plan_step(c, d, options(d, 2), codecs);
  const StepPlan alone = plan_step(c, d, options(d, 1), codecs);
  EXPECT_NEAR(group_seconds(shared, 0, comm::GroupKind::kPp),
              2 * group_seconds(alone, 0, comm::GroupKind::kPp), 1e-9);
}

TEST(StepPlan, RanksOnFewerCoresTakeTheirCpuWorkOverTheCores) {
  // dp4 with a link so fast that the step is compute: on 2 cores the 4 ranks
  // take twice as long; on 4 (or unstated) cores nothing changes.
  const auto c = small_gpt();
  const auto d = layout(4, 1, 1);
  auto o = options(d, 1);
  o.inter = {1e18, 0};
  CodecCostTable codecs;
  const double own_cores = plan_step(c, d, o, codecs).step_seconds;
  o.cores = 4;
  EXPECT_NEAR(plan_step(c, d, o, codecs).step_seconds, own_cores, 1e-6 * own_cores);
  o.cores = 2;
  EXPECT_NEAR(plan_step(c, d, o, codecs).step_seconds, 2 * own_cores, 1e-3 * own_cores);
}

TEST(StepPlan, TimeSharedCoresFillThePipelineBubbleWhenWaitsSleep) {
  // pp4, 8 micro-batches, links free: a core per rank gives (8 + 3) slots; one
  // core for all 4 ranks, whose waits sleep, runs their 4 x 8 slots of work
  // back to back, bubble filled, rather than 4 x 11.
  auto c = small_gpt();
  const auto d = layout(1, 1, 4);
  auto o = options(d, 1);
  o.inter = {1e18, 0};
  o.spinning_waits = false;
  CodecCostTable codecs;
  const StepPlan own = plan_step(c, d, o, codecs);
  double work = 0;
  for (const StagePlan& s : own.stages) work += 8 * (s.forward_seconds + s.backward_seconds);
  o.cores = 1;
  const StepPlan shared = plan_step(c, d, o, codecs);
  EXPECT_NEAR(shared.step_seconds, work, 1e-3 * work);
  EXPECT_LT(shared.step_seconds, 4 * own.step_seconds);
}

TEST(StepPlan, PollingWaitsStretchEveryRanksComputeByRanksOverCores) {
  // The same pp4 on one core, but a waiting rank polls and stays runnable: a
  // computing rank gets a quarter of the core all step long, so every slot,
  // the bubble's included, takes 4 times as long.
  auto c = small_gpt();
  const auto d = layout(1, 1, 4);
  auto o = options(d, 1);
  o.inter = {1e18, 0};
  CodecCostTable codecs;
  const StepPlan own = plan_step(c, d, o, codecs);
  o.cores = 1;
  const StepPlan shared = plan_step(c, d, o, codecs);
  EXPECT_DOUBLE_EQ(shared.compute_stretch, 4.0);
  EXPECT_NEAR(shared.step_seconds, 4 * own.step_seconds, 1e-6 * own.step_seconds);
  EXPECT_NEAR(shared.stages[0].forward_seconds, 4 * own.stages[0].forward_seconds, 1e-12);
}

// "bound by" names the largest part of the step, and the parts add up to
// the step: across layouts (pipeline slots far more than micro-batches,
// so that a blocking group's share of the critical path is several times
// its own calls' time) and links from slow to free, with and without the
// time-sharing bound. (The old rule compared each group's own calls with
// the whole pipeline's compute and printed "step: 128.40 s (compute
// 52.75 s) | bound by compute".)
TEST(StepPlan, BoundByNamesTheLargestPartOfTheStep) {
  auto c = small_gpt();
  int contradictions_of_the_old_rule = 0;
  for (const auto& d :
       {layout(1, 2, 4), layout(2, 2, 2), layout(4, 1, 1), layout(1, 1, 4), layout(2, 2, 2, 3)})
    for (int64_t global_batch : {int64_t(4) * d.dp, int64_t(32) * d.dp})
      for (double bits : {1e7, 1e8, 1e9, 1e10, 1e11, 1e18})
        for (double cores : {0.0, 1.0}) {
          c.training.global_batch = global_batch;
          auto o = options(d, 2);
          o.inter = {bits, 5e-6};
          o.intra = {bits * 8, 1e-6};
          o.cores = cores;
          CodecCostTable codecs;
          const StepPlan p = plan_step(c, d, o, codecs);
          const std::string where = d.to_string() + " batch " + std::to_string(global_batch) +
                                    " link " + std::to_string(bits) + " cores " +
                                    std::to_string(cores);
          ASSERT_FALSE(p.parts.empty()) << where;
          EXPECT_EQ(p.parts[0].name, "compute") << where;
          EXPECT_DOUBLE_EQ(p.parts[0].seconds, p.compute_seconds) << where;
          double sum = 0, largest = 0;
          std::string largest_name;
          for (const StepPart& part : p.parts) {
            sum += part.seconds;
            if (part.seconds > largest) largest = part.seconds, largest_name = part.name;
          }
          EXPECT_NEAR(sum, p.step_seconds, 1e-9 * p.step_seconds) << where;
          EXPECT_EQ(p.bound_by, largest_name) << where;
          // The old rule: a group only when its own exposed calls exceed
          // the pipeline's compute.
          double exposed = 0;
          for (const StagePlan& sp : p.stages)
            for (const GroupCost& g : sp.groups) exposed = std::max(exposed, g.exposed_seconds);
          if (p.bound_by != "compute" && exposed <= p.compute_seconds)
            ++contradictions_of_the_old_rule;
        }
  // The sweep holds cases the old rule got wrong.
  EXPECT_GT(contradictions_of_the_old_rule, 0);
}

std::string dp_codecs(const StepPlan& p) {
  for (const GroupCost& g : p.stages[0].groups)
    if (g.group == comm::GroupKind::kDp) return g.codecs;
  return "";
}

TEST(StepPlan, PresetAutoIsPricedAtTheCandidateItsModelWouldChoose) {
  // dp4 gradients: on a slow link auto sends them compressed and is projected
  // at least as fast as every fixed preset (its candidates include theirs);
  // on a link faster than any codec it sends them raw, as `none` does.
  auto c = small_gpt();
  const auto d = layout(4, 1, 1);
  auto o = options(d, 1);
  CodecCostTable codecs;
  const auto step_of = [&](const std::string& preset) {
    c.compression.preset = preset;
    return plan_step(c, d, o, codecs);
  };
  o.inter = {200e6, 0};
  const StepPlan slow = step_of("auto");
  EXPECT_EQ(dp_codecs(slow).rfind("auto: ", 0), 0u) << dp_codecs(slow);
  EXPECT_EQ(dp_codecs(slow).find("auto: raw"), std::string::npos) << dp_codecs(slow);
  for (const char* fixed : {"none", "mzhybrid", "zhybrid"})
    EXPECT_LE(slow.step_seconds, step_of(fixed).step_seconds * (1 + 1e-9)) << fixed;
  o.inter = {1e18, 0};
  const StepPlan fast = step_of("auto");
  EXPECT_EQ(dp_codecs(fast), "auto: raw");
  EXPECT_NEAR(fast.step_seconds, step_of("none").step_seconds, 1e-9);
}

const GroupCost* group_of(const StepPlan& p, comm::GroupKind kind) {
  for (const GroupCost& g : p.stages[0].groups)
    if (g.group == kind) return &g;
  return nullptr;
}

double part_of(const StepPlan& p, const std::string& name) {
  for (const StepPart& part : p.parts)
    if (part.name == name) return part.seconds;
  return 0;
}

// Context parallelism: each key/value hop of the ring hides behind the
// attention of the block the rank holds (3 chunk pairs at its own block, 2
// at every other), forward and backward (twice the forward's attention);
// the gradient accumulators' cp hops per block never hide
// (plan/ring_overlap.h). Worked by hand on small_gpt (4 blocks, 8
// micro-batches of 4 x 128 tokens, 8 heads of 32, 50 GFLOP/s, a 10 Gbit/s
// link with 5 us a message): the cp part of the step lies between nothing
// (compute only) and the blocking ring and is that sum.
TEST(StepPlan, ContextRingHopsHideBehindTheAttentionOfTheBlockHeld) {
  for (const int cp : {2, 4}) {
    SCOPED_TRACE("cp" + std::to_string(cp));
    auto c = small_gpt();
    c.parallel.context = cp;
    auto d = layout(1, 1, 1);
    d.cp = cp;
    auto o = options(d, 1);
    o.world_size = cp;
    o.inter = {10e9, 5e-6};
    CodecCostTable codecs;
    const StepPlan p = plan_step(c, d, o, codecs);

    // One chunk pair: QK^T and AV of 128 / (2 cp) queries against as many
    // keys, 4 sequences, hidden 256: 4 x chunk^2 x 256 x 4 FLOPs.
    const double chunk = 128.0 / (2 * cp);
    const double pair = 4 * chunk * chunk * 256 * 4 / 50e9;
    // One hop: the keys and values of 4 x 2 chunks x 256 floats, two
    // messages; the gradient accumulators the same in float32.
    const double hop = 2 * 5e-6 + 2 * (4 * 2 * chunk * 256 * 4) * 8 / 10e9;
    double forward = 0, backward = 0;
    for (int step = 0; step + 1 < cp; ++step) {
      const double pairs = step == 0 ? 3 : 2;
      forward += std::max(0.0, hop - pairs * pair);
      backward += std::max(0.0, hop - 2 * pairs * pair);
    }
    backward += cp * hop;
    const double expected = 8 * 4 * (forward + backward);
    const double blocking = 8 * 4 * ((cp - 1) * hop * 2 + cp * hop);

    const GroupCost* ring = group_of(p, comm::GroupKind::kCp);
    ASSERT_NE(ring, nullptr);
    EXPECT_NEAR(ring->seconds, blocking, 1e-9 * blocking) << "the blocking ring's time";
    EXPECT_NEAR(ring->exposed_seconds, expected, 1e-9 * expected);
    EXPECT_NEAR(part_of(p, "cp"), expected, 1e-9 * expected);
    const double compute_only = p.step_seconds - part_of(p, "cp");
    EXPECT_GT(p.step_seconds, compute_only);
    EXPECT_LT(p.step_seconds, compute_only + blocking);
  }
}

// Bytes one rank sends per step on tp, by (op, role).
std::map<std::pair<comm::Op, comm::Role>, double> tp_bytes(const config::Config& c,
                                                           const parallel::ParallelDims& d) {
  std::map<std::pair<comm::Op, comm::Role>, double> out;
  for (const MessageClass& m : step_traffic(c, d, 0))
    if (m.group == comm::GroupKind::kTp) out[{m.op, m.role}] += m.sent_bytes();
  return out;
}

// parallel.tp_forward_sum: compute halves the forward sums (allreduces, or
// under sequence parallelism the reduce-scatters and their gradients'
// all-gathers) under bf16 and changes nothing else; under fp32 nothing.
TEST(StepTraffic, ForwardSumsInTheComputeDtypeHalveOnlyTheirBytes) {
  const auto d = layout(1, 2, 1);
  for (bool sequence_parallel : {false, true}) {
    SCOPED_TRACE(sequence_parallel ? "sequence parallel" : "allreduce");
    auto c = small_gpt();
    c.parallel.sequence_parallel = sequence_parallel;
    EXPECT_EQ(tp_bytes(c, d), [&] {
      auto compute = c;
      compute.parallel.tp_forward_sum = "compute";
      return tp_bytes(compute, d);
    }()) << "fp32";
    c.training.precision = config::Precision::kBf16;
    const auto float32 = tp_bytes(c, d);
    c.parallel.tp_forward_sum = "compute";
    const auto compute = tp_bytes(c, d);
    const std::set<std::pair<comm::Op, comm::Role>> halved =
        sequence_parallel ? std::set<std::pair<comm::Op, comm::Role>>{{comm::Op::kReduceScatter,
                                                                       comm::Role::kActivation},
                                                                      {comm::Op::kAllgather,
                                                                       comm::Role::kActivationGrad}}
                          : std::set<std::pair<comm::Op, comm::Role>>{
                                {comm::Op::kAllreduce, comm::Role::kActivation}};
    ASSERT_EQ(float32.size(), compute.size());
    for (const auto& [key, bytes] : float32) {
      SCOPED_TRACE(std::string(comm::to_string(key.first)) + " " + comm::to_string(key.second));
      ASSERT_GT(bytes, 0);
      EXPECT_DOUBLE_EQ(compute.at(key), halved.count(key) ? bytes / 2 : bytes);
    }
  }
}

// The plan asks the policy with each message's word type: zhybrid sends
// bf16 pipeline words through fp8 and float32 ones through zfp rate 16,
// half the bytes either way.
TEST(StepPlan, SixteenBitWordsTakeTheRulesOfTheirWordType) {
  auto c = small_gpt();
  c.compression.preset = "zhybrid";
  c.compression.preset_locality = "any";
  const auto d = layout(1, 1, 2);
  const auto o = options(d, 1);
  CodecCostTable codecs;
  for (const std::string precision : {"fp32", "bf16"}) {
    SCOPED_TRACE(precision);
    c.training.precision = config::precision_named(precision);
    const StepPlan p = plan_step(c, d, o, codecs);
    bool found = false;
    for (const GroupCost& g : p.stages[0].groups) {
      if (g.group != comm::GroupKind::kPp) continue;
      found = true;
      EXPECT_EQ(g.codecs.find("fp8") != std::string::npos, precision == "bf16") << g.codecs;
      EXPECT_NEAR(g.wire_bytes / g.raw_bytes, 0.5, 0.02) << g.codecs;
    }
    EXPECT_TRUE(found) << "no pp traffic planned";
  }
}

TEST(MemoryEstimate, StateMatchesWhatTheOptimizerHolds) {
  // Per rank, 4-byte floats, P = the stage's parameters: stage 0 holds P, P
  // of gradients and 2P of moments; ZeRO-1 shards the moments, stages one
  // bucket's piece for the allgather and takes one reduced piece; ZeRO-2
  // stages one piece and adds the P/dp gradient shard to the flat buffer.
  const auto c = small_gpt();
  const double p = double(models::estimate_memory(c, layout(1, 1, 1)).parameter_bytes);
  const auto zero0 = models::estimate_memory(c, layout(4, 1, 1, 0));
  EXPECT_NEAR(double(zero0.state()), 4 * p, 1);
  EXPECT_NEAR(double(zero0.scratch_bytes), 4 << 20, 1) << "one bucket for the reduction";
  const auto zero1 = models::estimate_memory(c, layout(4, 1, 1, 1));
  EXPECT_NEAR(double(zero1.optimizer_bytes), 2 * p / 4, 1);
  EXPECT_NEAR(double(zero1.buffer_bytes), 2 * double(4 << 20) / 4, 1);
  EXPECT_NEAR(double(zero1.gradient_bytes), p, 1) << "ZeRO-1 reduce-scatters in place";
  const auto zero2 = models::estimate_memory(c, layout(4, 1, 1, 2));
  EXPECT_NEAR(double(zero2.buffer_bytes), double(4 << 20) / 4, 1);
  EXPECT_NEAR(double(zero2.gradient_bytes), p + p / 4, 1);
  EXPECT_EQ(double(models::estimate_memory(c, layout(1, 1, 1)).scratch_bytes), 0)
      << "no dp, no reduction";
  // Pipeline messages in flight: one micro-batch's activation-sized input
  // gradient held after its send (stages after the first) and one output
  // gradient received (stages before the last).
  const auto stages = models::estimate_stage_memory(c, layout(1, 1, 4));
  const double message =
      double(c.training.micro_batch * c.model.seq_len * c.model.hidden) * sizeof(float);
  ASSERT_EQ(stages.size(), 4u);
  EXPECT_EQ(double(stages[0].pipeline_send_bytes), message);
  EXPECT_EQ(double(stages[1].pipeline_send_bytes), 2 * message);
  EXPECT_EQ(double(stages[3].pipeline_send_bytes), message);
  EXPECT_EQ(double(models::estimate_memory(c, layout(4, 1, 1)).pipeline_send_bytes), 0);
}

// parallel.dp_sync: diloco: no gradient crosses dp; the same buckets carry
// the pseudo-gradients once every sync_every steps (the per-step average is
// 1/H of every_step's gradient bytes, whatever the fragments), the dp time
// shrinks with them, and a rank holds two more float32 copies of its
// parameters (and one bucket) as the outer state.
TEST(StepTraffic, DilocoSendsPseudoGradientsOnceEverySyncInterval) {
  auto c = small_gpt();
  const auto dims = layout(4, 1, 1);
  const auto dp_bytes = [&](const config::Config& config, comm::Role role) {
    double bytes = 0;
    for (const MessageClass& m : step_traffic(config, dims, 0))
      if (m.group == comm::GroupKind::kDp && m.role == role) bytes += m.sent_bytes();
    return bytes;
  };
  const double gradients = dp_bytes(c, comm::Role::kGradient);
  ASSERT_GT(gradients, 0);
  EXPECT_EQ(dp_bytes(c, comm::Role::kPseudoGradient), 0);
  auto d = c;
  d.parallel.dp_sync = "diloco";
  d.parallel.diloco.sync_every = 8;
  EXPECT_EQ(dp_bytes(d, comm::Role::kGradient), 0);
  EXPECT_DOUBLE_EQ(dp_bytes(d, comm::Role::kPseudoGradient), gradients / 8);
  d.parallel.diloco.fragments = 4;
  EXPECT_DOUBLE_EQ(dp_bytes(d, comm::Role::kPseudoGradient), gradients / 8);
  d.parallel.diloco.fragments = 1;
  const auto o = options(dims, 1);
  CodecCostTable codecs;
  const StepPlan every = plan_step(c, dims, o, codecs), diloco = plan_step(d, dims, o, codecs);
  EXPECT_NEAR(group_seconds(diloco, 0, comm::GroupKind::kDp),
              group_seconds(every, 0, comm::GroupKind::kDp) / 8,
              0.02 * group_seconds(every, 0, comm::GroupKind::kDp));
  const double p = double(models::estimate_memory(c, layout(1, 1, 1)).parameter_bytes);
  EXPECT_EQ(double(models::estimate_memory(c, dims).outer_state_bytes), 0);
  const auto memory = models::estimate_memory(d, dims);
  EXPECT_NEAR(double(memory.outer_state_bytes), 2 * p + double(4 << 20), 1);
  EXPECT_NEAR(double(memory.total() - models::estimate_memory(c, dims).total()),
              double(memory.outer_state_bytes), 1);
}

// 16-bit compute halves the activations a middle stage keeps (blocks only)
// and the gradient a stage holds after sending it back (16-bit words on the
// wire), and leaves the float32 masters, gradients and moments, and the
// received gradient (widened to float32), as they were; the head stage's
// logits stay float32.
TEST(MemoryEstimate, SixteenBitComputeHalvesBlockActivationsOnly) {
  auto c = small_gpt();
  const auto fp32 = models::estimate_stage_memory(c, layout(1, 1, 4));
  c.training.precision = config::Precision::kBf16;
  const auto bf16 = models::estimate_stage_memory(c, layout(1, 1, 4));
  ASSERT_EQ(bf16.size(), 4u);
  EXPECT_NEAR(double(bf16[1].activation_bytes), double(fp32[1].activation_bytes) / 2, 1);
  EXPECT_GT(double(bf16[3].activation_bytes), double(fp32[3].activation_bytes) / 2)
      << "the logits stay float32";
  EXPECT_LT(double(bf16[3].activation_bytes), double(fp32[3].activation_bytes));
  for (size_t s = 0; s < 4; ++s) {
    EXPECT_EQ(double(bf16[s].state()), double(fp32[s].state())) << "stage " << s;
  }
  const double message =
      double(c.training.micro_batch * c.model.seq_len * c.model.hidden) * sizeof(float);
  EXPECT_EQ(double(bf16[0].pipeline_send_bytes), message) << "receives only";
  EXPECT_EQ(double(bf16[1].pipeline_send_bytes), message / 2 + message);
  EXPECT_EQ(double(bf16[3].pipeline_send_bytes), message / 2) << "sends only";
}

}  // namespace
}  // namespace cmpi::plan
