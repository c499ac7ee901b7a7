// Replicas stay equal: a parameter several ranks hold — the LayerNorms, the
// row-parallel biases and the position table on every tp rank (also under
// sequence parallelism), the tied
// embedding on the pipeline's first and last stages, anything on every dp
// rank under ZeRO 0 — must hold the same bits on all of them after every
// step, under every compression policy and ZeRO stage, however lossy the dp
// reduction is (docs/policy.md, "Replicated parameters").
//
// Each test trains the tiny GPT for a few steps on one layout, once per
// policy (zhybrid, mzhybrid, auto, qsgd and topk with error feedback,
// powersgd) and ZeRO stage (0-3, and 3 holding only the gradient shard;
// powersgd 0-1), with every message
// compressed whatever its size and locality, and with a clip low enough that
// every step is clipped (so the clip factor must agree too). Then every rank
// sends its optimizer state (master weights and both AdamW moments, the runs
// it owns) to rank 0, which compares every element that more than one rank
// holds, keyed by global parameter name and tp slice, bit for bit. The bf16
// case runs the presets, which compress tp/pp traffic, under 16-bit compute,
// where that traffic travels as 16-bit words (ZeRO 1 only, to stay short),
// and again with the forward tp sums in bf16 (parallel.tp_forward_sum).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_manager.h"
#include "models/gpt_parallelize.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/zero/data_parallel_optimizer.h"
#include "tests/support/test_seed.h"
#include "tests/support/tiny_gpt_run.h"

namespace cmpi {
namespace {

constexpr int64_t kSteps = 3;
constexpr double kClip = 0.05;  // below every step's norm: each step is clipped

struct Policy {
  std::string name;
  comm::PolicyConfig config;
  std::vector<int> zero_stages = {0, 1, 2, 3};
};

// The presets on every message: on one machine every group is intra-node,
// and the tiny model's messages are far below the 64 KiB default.
comm::PolicyConfig preset(const std::string& name) {
  comm::PolicyConfig policy;
  policy.preset = name;
  policy.preset_locality = "any";
  policy.min_bytes = 0;
  if (name == "auto") {
    // Lossy candidates allowed as soon as measured, decisions every step.
    policy.auto_settings.max_rel_error = 1.0;
    policy.auto_settings.max_rel_error_feedback = 1.0;
    policy.auto_settings.probe_every = 1;
    policy.auto_settings.min_gain = 0;
  }
  return policy;
}

// Every gradient message (dp, zero, and the tied table's over pp) through a
// lossy codec with error feedback.
comm::PolicyConfig gradients_through(const compress::CodecSpec& codec) {
  comm::PolicyConfig policy;
  comm::PolicyRule rule;
  rule.match.groups = {comm::GroupKind::kDp, comm::GroupKind::kZero, comm::GroupKind::kPp};
  rule.match.roles = {comm::Role::kGradient};
  rule.match.min_bytes = 0;
  rule.codec = codec;
  rule.error_feedback = true;
  rule.origin = "test: " + codec.name() + " with error feedback";
  policy.rules.push_back(rule);
  return policy;
}

comm::PolicyConfig powersgd() {
  comm::PolicyConfig policy;
  comm::PolicyRule rule;
  rule.match.groups = {comm::GroupKind::kDp};
  rule.match.ops = {comm::Op::kAllreduce};
  rule.match.roles = {comm::Role::kGradient};
  rule.match.min_bytes = 0;
  rule.codec = compress::CodecSpec("powersgd", {{"rank", "2"}});
  rule.origin = "test: powersgd";
  policy.rules.push_back(rule);
  return policy;
}

std::vector<Policy> policies() {
  return {
      {"zhybrid", preset("zhybrid")},
      {"mzhybrid", preset("mzhybrid")},
      {"auto", preset("auto")},
      {"qsgd", gradients_through(compress::CodecSpec("qsgd", {{"levels", "4"}, {"bucket", "64"}}))},
      {"topk", gradients_through(compress::CodecSpec("topk", {{"ratio", "0.1"}}))},
      {"powersgd", powersgd(), {0, 1}}};
}

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// One run of a rank's optimizer state, flattened for the trip to rank 0:
// tensor key, offset, length, then values, exp_avg, exp_avg_sq.
void append_runs(const checkpoint::OptimizerPart& part, std::vector<char>& out) {
  const auto view = part.optimizer->state();
  const auto put = [&out](const void* data, size_t bytes) {
    const char* p = static_cast<const char*>(data);
    out.insert(out.end(), p, p + bytes);
  };
  for (const auto& run : view.runs) {
    const auto& param = part.params[run.param];
    std::string key = param.name;
    if (param.slice.count > 1) key += "@tp" + std::to_string(param.slice.index);
    const uint64_t header[3] = {key.size(), run.offset, run.length};
    put(header, sizeof header);
    put(key.data(), key.size());
    put(run.values, run.length * sizeof(float));
    put(run.exp_avg, run.length * sizeof(float));
    put(run.exp_avg_sq, run.length * sizeof(float));
  }
}

struct Holder {
  int rank = -1;
  float values[3] = {};
};

// On rank 0 of `comm`: every element held by several ranks, compared bit
// for bit; returns the first mismatches found (empty: all equal) and how
// many elements more than one rank held.
std::vector<std::string> compare_holders(const std::vector<char>& all,
                                         const std::vector<int>& sizes, size_t* shared) {
  static const char* const kKinds[3] = {"weight", "exp_avg", "exp_avg_sq"};
  std::map<std::string, std::vector<Holder>> tensors;
  std::map<std::string, int> mismatches_of;
  std::vector<std::string> mismatches;
  size_t at = 0;
  *shared = 0;
  for (int rank = 0; rank < int(sizes.size()); ++rank) {
    const size_t end = at + size_t(sizes[size_t(rank)]);
    while (at < end) {
      uint64_t header[3];
      std::memcpy(header, &all[at], sizeof header);
      at += sizeof header;
      const std::string key(&all[at], header[0]);
      at += header[0];
      const size_t offset = header[1], length = header[2];
      auto& held = tensors[key];
      if (held.size() < offset + length) held.resize(offset + length);
      for (size_t i = 0; i < length; ++i) {
        Holder h{rank, {}};
        for (int k = 0; k < 3; ++k)
          std::memcpy(&h.values[k], &all[at + (size_t(k) * length + i) * sizeof(float)],
                      sizeof(float));
        Holder& first = held[offset + i];
        if (first.rank < 0) {
          first = h;
          continue;
        }
        ++*shared;
        for (int k = 0; k < 3; ++k) {
          if (std::memcmp(&first.values[k], &h.values[k], sizeof(float)) == 0) continue;
          if (mismatches_of[key]++ > 0) break;  // the first per tensor says enough
          char line[256];
          std::snprintf(line, sizeof line, "%s[%zu] %s: rank %d holds %.9g, rank %d %.9g",
                        key.c_str(), offset + i, kKinds[k], first.rank, double(first.values[k]),
                        rank, double(h.values[k]));
          mismatches.push_back(line);
        }
      }
      at += 3 * length * sizeof(float);
    }
  }
  return mismatches;
}

struct Outcome {
  std::vector<std::string> mismatches;  // on rank 0 of the layout
  size_t shared = 0;
  double smallest_norm = 0;
  bool finite = true;
};

// Trains `layout` under `policy` at ZeRO `stage` and compares the replicas.
Outcome train_and_compare(MPI_Comm comm, parallel::ParallelDims dims, int stage,
                          const comm::PolicyConfig& policy, uint64_t seed,
                          const std::string& gradient_memory, bool sequence_parallel,
                          const std::string& precision, const std::string& tp_forward_sum,
                          bool llama) {
  dims.zero_stage = stage;
  config::Config config = llama ? testing::tiny_llama_config(seed) : testing::tiny_gpt_config(seed);
  config.parallel.sequence_parallel = sequence_parallel;
  config.training.precision = config::precision_named(precision);
  config.parallel.tp_forward_sum = tp_forward_sum;
  config.parallel.data = dims.dp;
  config.parallel.tensor = dims.tp;
  config.parallel.pipeline = dims.pp;
  config.parallel.context = dims.cp;
  config.parallel.zero_stage = stage;
  config.parallel.zero_gradient_memory = gradient_memory;
  config.parallel.dp_bucket_bytes = 2 << 10;  // several buckets, parameters cut across them
  // 36 wide: the tp slices of the attention's bias (54 floats) are no
  // multiple of zfp's blocks of 4, so replicated and sharded values share
  // blocks (with 32 zfp's block-local coding happens to keep them apart).
  // (Llama: 6 heads of 6 over 2 key/value heads, no biases: the replicated
  // values are the RMSNorm weights.)
  config.model.hidden = 36;
  if (llama) config.model.heads = 6;
  config.training.steps = kSteps;
  parallel::ProcessGroups groups(comm, dims, policy);
  auto model = models::parallelize_gpt(config, groups, {});
  Outcome outcome;
  outcome.smallest_norm = INFINITY;
  for (int64_t step = 0; step < kSteps; ++step) {
    model->adapt(step, comm::kNoPreviousLoss);
    const auto result = model->train_step(step, config.training.lr, kClip, "");
    outcome.finite = outcome.finite && std::isfinite(result.loss);
    outcome.smallest_norm = std::min(outcome.smallest_norm, model->last_grad_norm());
  }
  std::vector<char> mine;
  for (const auto& part : model->checkpoint_parts().optimizers) append_runs(part, mine);
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int my_size = int(mine.size());
  std::vector<int> sizes(static_cast<size_t>(size)), displs(static_cast<size_t>(size));
  MPI_Gather(&my_size, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, comm);
  std::vector<char> all;
  if (rank == 0) {
    int total = 0;
    for (int r = 0; r < size; ++r) {
      displs[size_t(r)] = total;
      total += sizes[size_t(r)];
    }
    all.resize(size_t(total));
  }
  MPI_Gatherv(mine.data(), my_size, MPI_CHAR, all.data(), sizes.data(), displs.data(), MPI_CHAR, 0,
              comm);
  if (rank == 0) outcome.mismatches = compare_holders(all, sizes, &outcome.shared);
  return outcome;
}

// The policies a 16-bit run checks: those that compress tp/pp traffic.
std::vector<Policy> bf16_policies() {
  return {{"zhybrid", preset("zhybrid"), {1}},
          {"mzhybrid", preset("mzhybrid"), {1}},
          {"auto", preset("auto"), {1}}};
}

void check_layout(int dp, int tp, int pp, bool sequence_parallel = false,
                  const std::string& precision = "fp32",
                  const std::string& tp_forward_sum = "float32", bool llama = false, int cp = 1) {
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  ASSERT_EQ(world, dp * tp * pp * cp) << "run this test on " << dp * tp * pp * cp << " ranks";
  parallel::ParallelDims dims;
  dims.dp = dp;
  dims.tp = tp;
  dims.pp = pp;
  dims.cp = cp;
  const uint64_t seed = testing::test_seed() % 100000;
  for (const auto& policy : precision == "fp32" ? policies() : bf16_policies()) {
    // ZeRO-3 also holding only the gradient shard (every micro-batch's
    // buckets reduce-scattered, the exact ones exactly, the tied table once).
    std::vector<std::pair<int, std::string>> variants;
    for (int stage : policy.zero_stages) {
      variants.push_back({stage, "full_buffer"});
      if (stage == 3) variants.push_back({stage, "shard"});
    }
    for (const auto& [stage, gradient_memory] : variants) {
      const std::string what =
          "dp" + std::to_string(dp) + " tp" + std::to_string(tp) + " pp" + std::to_string(pp) +
          " cp" + std::to_string(cp) + (sequence_parallel ? " SP" : "") + (llama ? " llama" : "") +
          " ZeRO " + std::to_string(stage) + (gradient_memory == "shard" ? " shard " : " ") +
          policy.name + " " + precision + " tp_forward_sum " + tp_forward_sum + " (model seed " +
          std::to_string(seed) + ")";
      const Outcome outcome =
          train_and_compare(MPI_COMM_WORLD, dims, stage, policy.config, seed, gradient_memory,
                            sequence_parallel, precision, tp_forward_sum, llama);
      EXPECT_TRUE(outcome.finite) << what;
      EXPECT_GT(outcome.smallest_norm, kClip) << what << ": a step was not clipped";
      if (world_rank() != 0) continue;
      EXPECT_GT(outcome.shared, 0u) << what << ": no element is held twice";
      std::string listed;
      for (const auto& m : outcome.mismatches) listed += "\n  " + m;
      EXPECT_TRUE(outcome.mismatches.empty())
          << what << ": replicas differ after " << kSteps << " steps:" << listed;
      std::printf("%s: %zu elements held by several ranks compared, %zu tensors differ\n",
                  what.c_str(), outcome.shared, outcome.mismatches.size());
      std::fflush(stdout);
    }
  }
}

TEST(ReplicaEquality, DataTimesTensor) {
  check_layout(2, 2, 1);
}

// Sequence parallelism: each tp rank's LayerNorm and bias gradients come
// from its own positions (through lossy tp all-gathers and reduce-scatters
// here) and are summed exactly over tp before the dp buckets.
TEST(ReplicaEquality, DataTimesTensorWithSequenceParallelism) {
  check_layout(2, 2, 1, true);
}

// The Llama architecture (grouped-query attention, RMSNorm, SwiGLU, no
// biases) with sequence parallelism: the RMSNorm weights are the replicas.
TEST(ReplicaEquality, LlamaDataTimesTensorWithSequenceParallelism) {
  check_layout(2, 2, 1, true, "fp32", "float32", true);
}

// Context parallelism: the cp ranks of a replica hold the same parameters,
// each computing the gradient of its part of the sequences (through the
// policy's lossy cp ring), reduced in the dp group, which spans them (dp1 x
// cp2: ZeRO shards over the cp ranks); tp2 replicates the norms and biases
// besides.
TEST(ReplicaEquality, TensorTimesContext) {
  check_layout(1, 2, 1, false, "fp32", "float32", false, 2);
}

TEST(ReplicaEquality, DataTimesPipelineWithTiedEmbedding) {
  check_layout(2, 1, 2);
}

TEST(ReplicaEquality, DataTimesTensorTimesPipeline) {
  check_layout(2, 2, 2);
}

TEST(ReplicaEquality, Bf16DataTimesTensorTimesPipeline) {
  check_layout(2, 2, 2, false, "bf16");
}

// parallel.tp_forward_sum: compute: the forward tp sums travel as bf16
// words too, through the presets' tp routes, with and without sequence
// parallelism; every tp rank must still get the same bits.
TEST(ReplicaEquality, Bf16ForwardSumsDataTimesTensor) {
  check_layout(2, 2, 1, false, "bf16", "compute");
  check_layout(2, 2, 1, true, "bf16", "compute");
}

}  // namespace
}  // namespace cmpi
