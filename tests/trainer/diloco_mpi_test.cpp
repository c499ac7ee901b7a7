// DiLoCo (parallel.dp_sync: diloco) on the tiny GPT: replicas drift apart
// between syncs and hold the same bits after each, through lossy
// pseudo-gradient routes too; the streaming fragments sync at their staggered
// steps; H = 1, outer lr 1 without momentum is "an inner step per replica,
// then the replicas' weights averaged", computed here independently; a
// warm-up's steps are every-step ones, bit for bit, before the schedule
// starts; a run resumed mid-interval or inside the warm-up continues bit for
// bit and its metrics say when a sync happened.
//
// Layouts (the test's rank count): dp2 on 2 ranks; dp2 x tp2 (tp-replicated
// parameters summed exactly) and dp2 x pp2 (the tied table shared between
// the pipeline's ends) on 4.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_manager.h"
#include "checkpoint/checkpoint_store.h"
#include "models/gpt_parallelize.h"
#include "parallel/diloco/sync_schedule.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/zero/data_parallel_optimizer.h"
#include "tests/support/checkpoint_state.h"
#include "tests/support/test_seed.h"
#include "tests/support/tiny_gpt_run.h"
#include "trainer/trainer.h"

namespace cmpi {
namespace {

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

// The layouts of this rank count.
std::vector<parallel::ParallelDims> layouts() {
  if (world_size() == 2) return {testing::dims_of(2)};
  if (world_size() == 4) return {testing::dims_of(2, 2, 1), testing::dims_of(2, 1, 2)};
  return {};
}

std::string name_of(const parallel::ParallelDims& d) {
  return "dp" + std::to_string(d.dp) + " tp" + std::to_string(d.tp) + " pp" + std::to_string(d.pp);
}

config::Config diloco_config(const parallel::ParallelDims& dims, int64_t sync_every,
                             int64_t fragments = 1) {
  config::Config c = testing::tiny_gpt_config(testing::test_seed() % 100000);
  c.parallel.data = dims.dp;
  c.parallel.tensor = dims.tp;
  c.parallel.pipeline = dims.pp;
  c.parallel.dp_sync = "diloco";
  c.parallel.diloco.sync_every = sync_every;
  c.parallel.diloco.fragments = fragments;
  c.parallel.dp_bucket_bytes = 2 << 10;  // several buckets per fragment
  c.training.grad_clip = 1.0;
  return c;
}

// Every message compressed, whatever its size and locality.
comm::PolicyConfig preset(const std::string& name) {
  comm::PolicyConfig policy;
  policy.preset = name;
  policy.preset_locality = "any";
  policy.min_bytes = 0;
  return policy;
}

// The pseudo-gradients alone through `codec` with error feedback.
comm::PolicyConfig pseudo_gradients_through(const compress::CodecSpec& codec) {
  comm::PolicyConfig policy;
  comm::PolicyRule rule;
  rule.match.groups = {comm::GroupKind::kDp};
  rule.match.roles = {comm::Role::kPseudoGradient};
  rule.match.min_bytes = 0;
  rule.codec = codec;
  rule.error_feedback = true;
  rule.origin = "test: pseudo-gradients through " + codec.name();
  policy.rules.push_back(rule);
  return policy;
}

// This rank's weights by parameter (tp slices keyed apart).
std::map<std::string, std::vector<float>> weights_of(models::TrainModel& model) {
  std::map<std::string, std::vector<float>> out;
  const auto parts = model.checkpoint_parts();
  const auto& part = parts.optimizers.front();
  for (const auto& run : part.optimizer->state().runs) {
    const auto& param = part.params[run.param];
    std::string key = param.name;
    if (param.slice.count > 1) key += "@tp" + std::to_string(param.slice.index);
    auto& values = out[key];
    if (values.size() < run.offset + run.length) values.resize(run.offset + run.length);
    std::memcpy(values.data() + run.offset, run.values, run.length * sizeof(float));
  }
  return out;
}

// Per key, how the world's holders compare (on every rank).
struct Comparison {
  std::map<std::string, bool> across_replicas_equal;  // the copies of different dp replicas
  bool within_replica_equal = true;  // copies one replica holds twice (tp, tied table)
  int keys_held_twice = 0;
};

Comparison compare(const std::map<std::string, std::vector<float>>& mine, int dp_coord) {
  // Every rank's (key, dp coordinate, values) to every rank.
  std::string bytes;
  for (const auto& [key, values] : mine) {
    const uint64_t header[3] = {key.size(), uint64_t(dp_coord), values.size()};
    bytes.append(reinterpret_cast<const char*>(header), sizeof header);
    bytes += key;
    bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  }
  const int size = world_size();
  int mine_size = int(bytes.size());
  std::vector<int> sizes(static_cast<size_t>(size)), displs(static_cast<size_t>(size));
  MPI_Allgather(&mine_size, 1, MPI_INT, sizes.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    displs[size_t(r)] = total;
    total += sizes[size_t(r)];
  }
  std::string all(size_t(total), '\0');
  MPI_Allgatherv(bytes.data(), mine_size, MPI_CHAR, all.data(), sizes.data(), displs.data(),
                 MPI_CHAR, MPI_COMM_WORLD);
  struct Holder {
    int dp;
    std::string values;
  };
  std::map<std::string, std::vector<Holder>> held;
  for (size_t at = 0; at < all.size();) {
    uint64_t header[3];
    std::memcpy(header, all.data() + at, sizeof header);
    at += sizeof header;
    const std::string key = all.substr(at, header[0]);
    at += header[0];
    held[key].push_back({int(header[1]), all.substr(at, header[2] * sizeof(float))});
    at += header[2] * sizeof(float);
  }
  Comparison c;
  for (const auto& [key, holders] : held) {
    if (holders.size() < 2) continue;
    ++c.keys_held_twice;
    bool across = true;
    for (size_t i = 1; i < holders.size(); ++i) {
      const bool equal = holders[i].values == holders[0].values;
      if (holders[i].dp == holders[0].dp)
        c.within_replica_equal = c.within_replica_equal && equal;
      else
        across = across && equal;
    }
    c.across_replicas_equal[key] = across;
  }
  return c;
}

// The fragment of a weight's key, as parallelize_gpt assigns it.
int fragment_of(const std::string& key, int64_t layers, int64_t fragments) {
  if (key.rfind("block", 0) == 0)
    return parallel::SyncSchedule::fragment_of_layer(std::stoll(key.substr(5)), layers, fragments);
  if (key.rfind("final_norm", 0) == 0 || key.rfind("output_head", 0) == 0)
    return int(fragments - 1);
  return 0;
}

// Trains `steps` steps and checks after each that exactly the fragments the
// schedule names hold the same bits on every replica (all of them during the
// warm-up, whose steps reduce gradients over dp); the losses go to `losses`
// when given.
void check_sync_equality(const parallel::ParallelDims& dims, const config::Config& config,
                         const comm::PolicyConfig& policy, int64_t steps, const std::string& what,
                         std::vector<double>* losses = nullptr) {
  parallel::ProcessGroups groups(MPI_COMM_WORLD, dims, policy);
  auto model = models::parallelize_gpt(config, groups, {});
  const parallel::SyncSchedule schedule(config.parallel.diloco.sync_every,
                                        config.parallel.diloco.fragments);
  const int64_t warmup = config.parallel.diloco.warmup_steps;
  for (int64_t step = 0; step < steps; ++step) {
    const uint64_t dp_bytes_before = groups.dp().stats().total().raw_bytes;
    const auto outcome = model->train_step(step, config.training.lr, config.training.grad_clip, "");
    if (losses) losses->push_back(outcome.loss);
    ASSERT_TRUE(std::isfinite(outcome.loss)) << what << " step " << step + 1;
    const std::vector<int> due = schedule.due(step + 1 - warmup);
    EXPECT_EQ(model->last_outer_sync().fragments, due) << what << " after step " << step + 1;
    const uint64_t dp_bytes = groups.dp().stats().total().raw_bytes - dp_bytes_before;
    const auto mine = weights_of(*model);
    if (step < warmup) {
      EXPECT_GT(dp_bytes, 1000u) << what << ": no gradient crossed dp in warm-up step " << step + 1;
      const Comparison c = compare(mine, groups.coord().dp);
      for (const auto& [key, same] : c.across_replicas_equal)
        EXPECT_TRUE(same) << what << ": " << key << " differs between replicas in warm-up step "
                          << step + 1;
      continue;
    }
    bool holds_due = false;  // a pipeline stage may hold none of the fragments due
    for (const auto& kv : mine)
      holds_due =
          holds_due || std::find(due.begin(), due.end(),
                                 fragment_of(kv.first, config.model.layers,
                                             config.parallel.diloco.fragments)) != due.end();
    // Without a sync dp carries the loss alone (one float, 2(n-1)/n of it).
    if (!holds_due)
      EXPECT_LE(dp_bytes, sizeof(float)) << what << ": dp traffic in inner step " << step + 1;
    else
      EXPECT_GT(dp_bytes, 1000u) << what << ": no pseudo-gradient at step " << step + 1;
    const Comparison c = compare(mine, groups.coord().dp);
    ASSERT_GT(c.keys_held_twice, 0) << what;
    EXPECT_TRUE(c.within_replica_equal)
        << what << ": copies inside one replica differ after step " << step + 1;
    int equal = 0, differ = 0;
    for (const auto& [key, same] : c.across_replicas_equal) {
      const int f = fragment_of(key, config.model.layers, config.parallel.diloco.fragments);
      const bool synced = std::find(due.begin(), due.end(), f) != due.end();
      if (synced)
        EXPECT_TRUE(same) << what << ": " << key << " (fragment " << f
                          << ") differs between replicas right after its sync at step " << step + 1;
      (same ? equal : differ) += 1;
    }
    // Between its syncs a fragment's replicas have taken different steps.
    if (due.size() == size_t(config.parallel.diloco.fragments))
      EXPECT_EQ(differ, 0) << what << " after step " << step + 1;
    else
      EXPECT_GT(differ, 0) << what << ": replicas equal after inner step " << step + 1
                           << ", which synchronised " << due.size() << " fragment(s)";
  }
}

TEST(Diloco, ReplicasDifferBetweenSyncsAndAreBitEqualAfterEach) {
  ASSERT_FALSE(layouts().empty()) << "run this test on 2 or 4 ranks";
  const std::vector<std::pair<std::string, comm::PolicyConfig>> policies = {
      {"none", comm::PolicyConfig{}},
      {"zhybrid (zfp rate 8 + error feedback)", preset("zhybrid")},
      {"fp8 e4m3 + error feedback",
       pseudo_gradients_through(compress::CodecSpec("fp8", {{"format", "e4m3"}}))},
      {"qsgd 16 levels + error feedback",
       pseudo_gradients_through(compress::CodecSpec("qsgd", {{"levels", "16"}}))}};
  for (const auto& dims : layouts())
    for (const auto& [policy_name, policy] : policies)
      check_sync_equality(dims, diloco_config(dims, 3), policy, 7,
                          name_of(dims) + " H3 " + policy_name);
}

TEST(Diloco, StreamingFragmentsSyncAtStaggeredSteps) {
  ASSERT_FALSE(layouts().empty()) << "run this test on 2 or 4 ranks";
  for (const auto& dims : layouts()) {
    config::Config config = diloco_config(dims, 4, 2);
    // Across two stages an untied head (in the last fragment); on one the tied table.
    config.model.tie_embeddings = dims.pp == 1;
    check_sync_equality(dims, config, preset("zhybrid"), 9, name_of(dims) + " H4 F2 zhybrid");
  }
}

// A warm-up of W steps is every-step training (the same losses, bit for bit,
// as dp_sync: every_step) with the replicas one model; then they go apart and
// the schedule counts from W: syncs after steps W + H, W + 2H.
TEST(Diloco, WarmupStepsAreEveryStepStepsThenTheScheduleStarts) {
  ASSERT_FALSE(layouts().empty()) << "run this test on 2 or 4 ranks";
  for (const auto& dims : layouts()) {
    config::Config config = diloco_config(dims, 2);
    config.parallel.diloco.warmup_steps = 3;
    const std::string what = name_of(dims) + " H2 warm-up 3 zhybrid";
    std::vector<double> losses;
    check_sync_equality(dims, config, preset("zhybrid"), 7, what, &losses);
    ASSERT_EQ(losses.size(), 7u) << what;
    config::Config every_step = config;
    every_step.parallel.dp_sync = "every_step";
    parallel::ProcessGroups groups(MPI_COMM_WORLD, dims, preset("zhybrid"));
    auto reference = models::parallelize_gpt(every_step, groups, {});
    for (int64_t step = 0; step < 5; ++step) {
      const double loss =
          reference->train_step(step, config.training.lr, config.training.grad_clip, "").loss;
      if (step < 3)
        EXPECT_EQ(losses[size_t(step)], loss) << what << ": warm-up step " << step + 1;
      else if (step == 4)  // after the first inner step, on each replica's own gradients
        EXPECT_NE(losses[size_t(step)], loss) << what << ": step " << step + 1;
    }
  }
}

// H = 1, outer lr 1, no momentum: after each inner step the outer weights
// are the replicas' average. The reference is a DiLoCo model that never
// syncs (its inner steps alone), whose weights this test averages over dp
// itself after every step (float sums in MPI, divided by dp).
TEST(Diloco, RateOneWithoutMomentumIsInnerStepsThenAveragedWeights) {
  ASSERT_FALSE(layouts().empty()) << "run this test on 2 or 4 ranks";
  const parallel::ParallelDims dims = layouts().front();
  const int64_t steps = 4;
  config::Config averaged = diloco_config(dims, 1);
  averaged.parallel.diloco.outer_lr = 1.0;
  averaged.parallel.diloco.outer_momentum = 0.0;
  config::Config inner_only = diloco_config(dims, 1000);
  parallel::ProcessGroups groups_a(MPI_COMM_WORLD, dims);
  parallel::ProcessGroups groups_b(MPI_COMM_WORLD, dims);
  auto model = models::parallelize_gpt(averaged, groups_a, {});
  auto reference = models::parallelize_gpt(inner_only, groups_b, {});
  const int dp = groups_b.dp().size();
  for (int64_t step = 0; step < steps; ++step) {
    const double loss =
        model->train_step(step, averaged.training.lr, averaged.training.grad_clip, "").loss;
    const double reference_loss =
        reference->train_step(step, averaged.training.lr, averaged.training.grad_clip, "").loss;
    EXPECT_NEAR(loss, reference_loss, 1e-5 * std::abs(reference_loss)) << "step " << step + 1;
    // Average the reference's weights over dp, keeping its AdamW moments.
    auto& optimizer = reference->optimizer();
    const auto view = optimizer.state();
    std::vector<std::vector<float>> kinds[3];
    for (const auto& run : view.runs) {
      std::vector<float> values(run.values, run.values + run.length);
      MPI_Allreduce(MPI_IN_PLACE, values.data(), int(values.size()), MPI_FLOAT, MPI_SUM,
                    groups_b.dp().mpi());
      for (float& v : values) v /= float(dp);
      kinds[0].push_back(std::move(values));
      kinds[1].emplace_back(run.exp_avg, run.exp_avg + run.length);
      kinds[2].emplace_back(run.exp_avg_sq, run.exp_avg_sq + run.length);
    }
    std::map<size_t, size_t> run_of;
    for (size_t r = 0; r < view.runs.size(); ++r) run_of[view.runs[r].param] = r;
    optimizer.load_state(view.steps, [&](size_t param, parallel::StateKind kind, size_t offset,
                                         size_t length, float* out) {
      std::memcpy(out, kinds[size_t(kind)][run_of.at(param)].data() + offset,
                  length * sizeof(float));
    });
  }
  const auto mine = weights_of(*model), theirs = weights_of(*reference);
  ASSERT_EQ(mine.size(), theirs.size());
  double worst = 0;
  for (const auto& [key, values] : mine) {
    const auto& other = theirs.at(key);
    ASSERT_EQ(values.size(), other.size()) << key;
    for (size_t i = 0; i < values.size(); ++i)
      worst = std::max(worst, double(std::abs(values[i] - other[i])));
  }
  // One float rounding per step apart: outer - mean(outer - local) against mean(local).
  EXPECT_LT(worst, 1e-5) << "weights after " << steps << " steps";
}

// Trains 8 steps of H = 3 under a lossy route with error feedback, saving
// at `saved_at`, and resumes from there: the resumed run continues as the
// uninterrupted one, bit for bit; metrics.jsonl names the syncs, `synced`.
void expect_resumed_bit_for_bit(int64_t warmup_steps, int64_t saved_at,
                                const std::vector<int>& synced_steps, const std::string& what) {
  const parallel::ParallelDims dims = layouts().front();
  const std::string root = std::filesystem::temp_directory_path().string() + "/cmpi_diloco_" +
                           std::to_string(testing::test_seed() % 100000) + "_" +
                           std::to_string(world_size());
  if (world_rank() == 0) std::filesystem::remove_all(root);
  MPI_Barrier(MPI_COMM_WORLD);
  config::Config config = diloco_config(dims, 3);
  config.parallel.diloco.warmup_steps = warmup_steps;
  config.training.steps = 8;
  config.checkpoint.every = saved_at;
  config.checkpoint.keep_last = 0;
  config.compression = preset("zhybrid");
  const auto run = [&](const std::string& name, const std::string& resume) {
    config::Config c = config;
    c.checkpoint.dir = root + "/" + name;
    parallel::ProcessGroups groups(MPI_COMM_WORLD, dims, c.compression);
    trainer::TrainerOptions options;
    options.print_every = 0;
    options.run_dir = root + "/" + name + "_run";
    options.resume_path = resume;
    trainer::Trainer trainer(c, groups, options);
    return trainer.run().losses;
  };
  const std::vector<double> whole = run("whole", "");
  const std::vector<double> resumed =
      run("resumed", root + "/whole/" + checkpoint::checkpoint_name(saved_at));
  ASSERT_EQ(whole.size(), 8u) << what;
  ASSERT_EQ(resumed.size(), size_t(8 - saved_at)) << what;
  for (size_t i = 0; i < resumed.size(); ++i)
    EXPECT_EQ(whole[size_t(saved_at) + i], resumed[i])
        << what << ": step " << saved_at + int64_t(i) + 1 << " after resuming at step " << saved_at;
  if (world_rank() == 0) {
    testing::expect_same_checkpoint_state(root + "/whole/" + checkpoint::checkpoint_name(8),
                                          root + "/resumed/" + checkpoint::checkpoint_name(8),
                                          what);
    std::ifstream metrics(root + "/whole_run/metrics.jsonl");
    std::string line;
    std::vector<int> synced;
    for (int step = 1; std::getline(metrics, line); ++step)
      if (line.find("\"outer_sync\":[0]") != std::string::npos) synced.push_back(step);
    EXPECT_EQ(synced, synced_steps) << what;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) std::filesystem::remove_all(root);
}

// Saved mid-interval (step 4 of H = 3).
TEST(Diloco, ResumesMidIntervalBitForBit) {
  ASSERT_FALSE(layouts().empty()) << "run this test on 2 or 4 ranks";
  expect_resumed_bit_for_bit(0, 4, {3, 6}, "DiLoCo resumed at step 4");
}

// Saved inside a warm-up of 3 steps (after step 2): the checkpoint holds no
// outer state worth keeping, so the resumed run must take the outer weights
// where the warm-up ends, as the uninterrupted run does; syncs at 3 + 3.
TEST(Diloco, ResumesInsideTheWarmupBitForBit) {
  ASSERT_FALSE(layouts().empty()) << "run this test on 2 or 4 ranks";
  expect_resumed_bit_for_bit(3, 2, {6}, "DiLoCo resumed inside its warm-up at step 2");
}

}  // namespace
}  // namespace cmpi
