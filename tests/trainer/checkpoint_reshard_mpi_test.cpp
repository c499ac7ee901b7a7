// Checkpoints saved under one layout and loaded under another (and under the
// same one). For each case, on the first ranks of an 8-rank world:
//   1. layout A trains 4 steps, saving at steps 2 and 4 (the "continued under
//      the original layout" trajectory);
//   2. layout B resumes A's step-2 checkpoint and saves it again at once: every
//      parameter's consolidated weights and AdamW moments must equal A's bit
//      for bit (the load re-cut them for B, the save cut them back);
//   3. B trains steps 3..4: same layout as A -> losses identical to A's;
//      another layout -> within float tolerance of A's and of the single-rank
//      model's.
// Besides the plain runs, four variants resume bit-exactly under the same
// layout: a lossy policy with error feedback (qsgd on dp, whose generator
// state is saved too, and topk on the ZeRO group), PowerSGD on dp, dropout
// 0.1, and bf16 / fp16 compute (float32 masters; fp16's loss scale); under
// another layout, error-feedback residuals are dropped with a warning.
// The resharding cases are generated (axis_changes): every change x -> y,
// x != y in {1, 2, 4}, of each of dp, tp and pp, with the other two axes at
// values that fit 8 ranks, varied from case to case, and ZeRO stage changes
// on the dp changes. Each test prints its cases.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/loaded_checkpoint.h"
#include "checkpoint/metadata.h"
#include "parallel/mesh/process_groups.h"
#include "tests/support/checkpoint_state.h"
#include "tests/support/tiny_gpt_run.h"
#include "trainer/trainer.h"

namespace cmpi {
namespace {

constexpr double kTolerance = 1e-5;  // relative: only the order of float sums differs
constexpr int64_t kSteps = 4, kSaveAt = 2;

struct Layout {
  int dp = 1, tp = 1, pp = 1, zero = 0;
  int cp = 1;  // context parallelism
  int ranks() const { return dp * tp * pp * cp; }
  std::string name() const {
    return "dp" + std::to_string(dp) + "tp" + std::to_string(tp) + "pp" + std::to_string(pp) +
           (cp > 1 ? "cp" + std::to_string(cp) : std::string()) + "z" + std::to_string(zero);
  }
};

// What a run trains with besides its layout.
struct Variant {
  std::string name = "plain";
  comm::PolicyConfig policy;  // lossless unless a rule says otherwise
  double dropout = 0;
  std::string precision = "fp32";               // training.precision
  std::string gradient_memory = "full_buffer";  // parallel.zero_gradient_memory (ZeRO 2/3)
  bool llama = false;      // the Llama architecture (tiny_llama_config) instead of GPT-2's
  int64_t vocab_size = 0;  // 0: the tiny config's (64)
  // Plain runs follow the single-rank (float32) model; lossy ones, dropout
  // and 16-bit compute do not.
  bool follows_single_rank() const {
    return policy.rules.empty() && dropout == 0 && precision == "fp32";
  }
};

Variant plain() {
  return {};
}

// Every dp gradient through qsgd (stochastic: its generator is state) and
// every ZeRO reduce-scatter through topk, both with error feedback.
Variant error_feedback() {
  Variant v;
  v.name = "qsgd+topk with error feedback";
  comm::PolicyRule dp;
  dp.match.groups = {comm::GroupKind::kDp};
  dp.match.roles = {comm::Role::kGradient};
  dp.match.min_bytes = 0;
  dp.codec = compress::CodecSpec("qsgd", {{"levels", "16"}, {"bucket", "64"}});
  dp.error_feedback = true;
  comm::PolicyRule zero = dp;
  zero.match.groups = {comm::GroupKind::kZero};
  zero.codec = compress::CodecSpec("topk", {{"ratio", "0.25"}});
  v.policy.rules = {dp, zero};
  return v;
}

// Every dp gradient allreduce through PowerSGD rank 2 from the second step
// on: its Q's, residuals and per-bucket counters are per-rank state.
Variant powersgd() {
  Variant v;
  v.name = "powersgd rank 2";
  comm::PolicyRule rule;
  rule.match.groups = {comm::GroupKind::kDp};
  rule.match.ops = {comm::Op::kAllreduce};
  rule.match.roles = {comm::Role::kGradient};
  rule.match.min_bytes = 0;
  rule.codec = compress::CodecSpec("powersgd", {{"rank", "2"}, {"start_step", "1"}});
  rule.origin = "test rule";
  v.policy.rules = {rule};
  return v;
}

// 16-bit compute over float32 masters: the masters and moments are what a
// checkpoint holds. fp16 doubles its loss scale after every finite step, so
// the scale saved at step 2 is not the initial one: the scaler's state must
// come back for the losses to match bit for bit.
Variant mixed_precision(const std::string& precision) {
  Variant v;
  v.name = precision;
  v.precision = precision;
  return v;
}

// Llama's switches: grouped-query attention (tp splits the key/value
// heads), RMSNorm, SwiGLU's three matrices, no biases.
Variant llama() {
  Variant v;
  v.name = "llama";
  v.llama = true;
  return v;
}

// A vocabulary of 61 tokens, padded for tp (model.vocab_multiple 1): its
// tables have 61, 62 or 64 rows under tp 1, 2 or 4; a checkpoint of one
// padding loads under another.
Variant odd_vocabulary() {
  Variant v;
  v.name = "vocabulary 61";
  v.vocab_size = 61;
  return v;
}

Variant dropout() {
  Variant v;
  v.name = "dropout 0.1";
  v.dropout = 0.1;
  return v;
}

// The trainer takes the ZeRO stage (and the sizes it reports) from the
// config, the process groups from ParallelDims: both are set.
config::Config test_config(const std::string& checkpoint_dir, const Variant& variant,
                           const Layout& layout) {
  config::Config c = variant.llama ? testing::tiny_llama_config(77) : testing::tiny_gpt_config(77);
  c.parallel.data = layout.dp;
  c.parallel.tensor = layout.tp;
  c.parallel.pipeline = layout.pp;
  c.parallel.context = layout.cp;
  c.parallel.zero_stage = layout.zero;
  c.parallel.zero_gradient_memory = layout.zero >= 2 ? variant.gradient_memory : "full_buffer";
  c.model.layers = 4;  // room for 4 pipeline stages
  c.model.dropout = variant.dropout;
  if (variant.vocab_size > 0) c.model.vocab_size = variant.vocab_size;
  c.training.precision = config::precision_named(variant.precision);
  c.training.loss_scale_growth_interval = 1;  // fp16 only
  c.training.steps = kSteps;
  c.training.warmup_steps = 1;
  c.parallel.dp_bucket_bytes = 16 << 10;  // several buckets: shards cut inside parameters
  c.checkpoint.dir = checkpoint_dir;
  c.checkpoint.every = kSaveAt;
  return c;
}

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

std::string shared_temp_dir() {
  char path[256] = {};
  if (world_rank() == 0) {
    std::strcpy(path, "/tmp/cmpi_ckpt_XXXXXX");
    if (!mkdtemp(path)) path[0] = 0;
  }
  MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
  return path;
}

// Runs `body` on a communicator of the first layout.ranks() world ranks;
// returns its losses broadcast to every world rank.
template <typename Body>
std::vector<double> on_ranks_of(const Layout& layout, const comm::PolicyConfig& policy, Body body) {
  const int rank = world_rank();
  MPI_Comm comm;
  MPI_Comm_split(MPI_COMM_WORLD, rank < layout.ranks() ? 0 : MPI_UNDEFINED, rank, &comm);
  std::vector<double> losses(kSteps, 0.0);
  int count = 0;
  if (comm != MPI_COMM_NULL) {
    parallel::ParallelDims dims;
    dims.dp = layout.dp;
    dims.tp = layout.tp;
    dims.pp = layout.pp;
    dims.cp = layout.cp;
    dims.zero_stage = layout.zero;
    parallel::ProcessGroups groups(comm, dims, policy);
    const auto got = body(groups);
    count = int(got.size());
    std::copy(got.begin(), got.end(), losses.begin());
    MPI_Comm_free(&comm);
  }
  MPI_Bcast(&count, 1, MPI_INT, 0, MPI_COMM_WORLD);
  losses.resize(size_t(count));
  MPI_Bcast(losses.data(), count, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return losses;
}

trainer::TrainerOptions quiet() {
  trainer::TrainerOptions options;
  options.print_every = 0;
  return options;
}

void expect_same_state(const std::string& saved, const std::string& reloaded,
                       const std::string& what) {
  if (world_rank() != 0) return;
  testing::expect_same_checkpoint_state(saved, reloaded, what);
}

struct CaseResult {
  std::string saved;         // A's checkpoint B resumed from
  std::string resume_notes;  // what world rank 0 wrote to stderr while B resumed
};

CaseResult check_case(const Layout& from, const Layout& to, const std::vector<double>& single_rank,
                      const std::string& root, const Variant& variant = plain()) {
  const std::string what = from.name() + " -> " + to.name() + " (" + variant.name + ")";
  SCOPED_TRACE(what);
  if (world_rank() == 0) {
    std::printf("case: %s\n", what.c_str());
    std::fflush(stdout);
  }
  const std::string dir = root + "/" + from.name() + "-" + to.name() + "-" +
                          std::to_string(variant.dropout) +
                          std::to_string(variant.policy.rules.size()) + variant.precision +
                          variant.gradient_memory + std::to_string(variant.vocab_size);
  const std::string dir_a = dir + "/a", dir_b = dir + "/b";
  CaseResult result;
  const auto original = on_ranks_of(from, variant.policy, [&](parallel::ProcessGroups& groups) {
    const auto config = test_config(dir_a, variant, from);  // the trainer keeps a reference
    trainer::Trainer t(config, groups, quiet());
    return t.run().losses;
  });
  EXPECT_EQ(original.size(), size_t(kSteps));
  if (original.size() != size_t(kSteps)) return result;
  result.saved = dir_a + "/" + checkpoint::checkpoint_name(kSaveAt);
  const auto resumed = on_ranks_of(to, variant.policy, [&](parallel::ProcessGroups& groups) {
    auto options = quiet();
    options.print_every = groups.world_rank() == 0 ? 1000 : 0;  // warnings, not progress
    options.resume_path = result.saved;
    const auto config = test_config(dir_b, variant, to);
    if (groups.world_rank() == 0) ::testing::internal::CaptureStderr();
    std::unique_ptr<trainer::Trainer> t;
    try {
      t = std::make_unique<trainer::Trainer>(config, groups, options);
    } catch (...) {
      if (groups.world_rank() == 0)
        std::fputs(::testing::internal::GetCapturedStderr().c_str(), stderr);
      throw;
    }
    if (groups.world_rank() == 0) result.resume_notes = ::testing::internal::GetCapturedStderr();
    t->save_checkpoint();
    return t->run().losses;
  });
  MPI_Barrier(MPI_COMM_WORLD);
  expect_same_state(result.saved, dir_b + "/" + checkpoint::checkpoint_name(kSaveAt), what);
  EXPECT_EQ(resumed.size(), size_t(kSteps - kSaveAt));
  if (resumed.size() != size_t(kSteps - kSaveAt)) return result;
  const std::vector<double> after(original.begin() + kSaveAt, original.end());
  const std::vector<double> single_after(single_rank.begin() + kSaveAt, single_rank.end());
  if (from.name() == to.name()) {
    EXPECT_EQ(resumed, after) << "same layout: resuming must be bit-exact";
  } else if (variant.follows_single_rank()) {
    testing::expect_same_trajectory(after, resumed, kTolerance, what + " vs original layout");
  }
  if (variant.follows_single_rank())
    testing::expect_same_trajectory(single_after, resumed, kTolerance, what + " vs 1 rank");
  for (double loss : resumed) EXPECT_TRUE(std::isfinite(loss)) << what;
  return result;
}

enum class Axis { kDp, kTp, kPp };

const char* axis_name(Axis axis) {
  return axis == Axis::kDp ? "dp" : axis == Axis::kTp ? "tp" : "pp";
}

// Every change x -> y (x != y in {1, 2, 4}) of `axis`. The other two axes
// take, case by case, the next of the value pairs that fit 8 ranks with
// max(x, y), so mixed layouts are covered; dp changes also change the ZeRO
// stage (every stage appears before and after), tp and pp changes keep one
// stage, cycling through 0..3.
std::vector<std::pair<Layout, Layout>> axis_changes(Axis axis) {
  const int values[] = {1, 2, 4};
  const std::pair<int, int> zero_changes[] = {{0, 3}, {1, 2}, {2, 0}, {3, 1}, {3, 2}, {1, 0}};
  std::vector<std::pair<Layout, Layout>> out;
  int k = 0;
  for (int x : values)
    for (int y : values) {
      if (x == y) continue;
      std::vector<std::pair<int, int>> fits;
      for (int a : values)
        for (int b : values)
          if (std::max(x, y) * a * b <= 8) fits.emplace_back(a, b);
      const auto [a, b] = fits[size_t(k + int(axis)) % fits.size()];
      Layout from, to;
      if (axis == Axis::kDp) {
        from = {x, a, b, zero_changes[k].first};
        to = {y, a, b, zero_changes[k].second};
      } else if (axis == Axis::kTp) {
        from = {a, x, b, k % 4};
        to = {a, y, b, k % 4};
      } else {
        from = {a, b, x, k % 4};
        to = {a, b, y, k % 4};
      }
      out.emplace_back(from, to);
      ++k;
    }
  return out;
}

void check_axis(Axis axis, const std::vector<double>& single_rank, const std::string& root) {
  const auto cases = axis_changes(axis);
  if (world_rank() == 0) {
    std::printf("%zu %s changes:", cases.size(), axis_name(axis));
    for (const auto& [from, to] : cases)
      std::printf(" %s->%s", from.name().c_str(), to.name().c_str());
    std::printf("\n");
    std::fflush(stdout);
  }
  for (const auto& [from, to] : cases) check_case(from, to, single_rank, root);
}

class CheckpointReshard : public ::testing::Test {
 protected:
  void SetUp() override {
    int world = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    ASSERT_EQ(world, 8) << "run this test on 8 ranks";
    root_ = shared_temp_dir();
    ASSERT_FALSE(root_.empty());
    auto config = test_config("", plain(), Layout{});
    config.checkpoint.every = 0;
    single_rank_ = testing::single_rank_losses(config);
  }
  void TearDown() override {
    MPI_Barrier(MPI_COMM_WORLD);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0 && !root_.empty()) std::filesystem::remove_all(root_);
  }
  std::string root_;
  std::vector<double> single_rank_;
};

TEST_F(CheckpointReshard, SameLayoutResumesBitExact) {
  for (const Layout& l :
       {Layout{4, 1, 1, 0}, Layout{2, 1, 1, 1}, Layout{4, 1, 1, 2}, Layout{2, 2, 1, 3},
        Layout{2, 1, 2, 1}, Layout{1, 2, 2, 0}, Layout{2, 2, 2, 2}})
    check_case(l, l, single_rank_, root_);
}

// Residuals and the qsgd generators come back from each rank's shard: without
// them the resumed losses would differ from the second resumed step on. With
// tp or pp > 1 too: a checkpoint holds one copy of a parameter replicated
// over tp (layer norms, biases) and of the tied embedding, which is exact
// only because the copies stay bit-identical under a lossy dp policy
// (docs/policy.md, "Replicated parameters").
TEST_F(CheckpointReshard, LossyPolicyWithErrorFeedbackResumesBitExact) {
  for (const Layout& l : {Layout{2, 1, 1, 0}, Layout{4, 1, 1, 2}, Layout{2, 1, 1, 3},
                          Layout{2, 2, 1, 1}, Layout{2, 1, 2, 2}, Layout{2, 2, 2, 0}}) {
    const auto result = check_case(l, l, single_rank_, root_, error_feedback());
    if (world_rank() == 0 && !result.saved.empty()) {
      const auto meta = checkpoint::read_metadata(result.saved + "/" + checkpoint::kMetadataFile);
      EXPECT_GT(meta.residual_buffers, 0) << l.name() << ": no residuals saved";
      EXPECT_EQ(result.resume_notes, "") << l.name();
    }
  }
}

// ZeRO 2/3 holding only the gradient shard (a reduce-scatter per bucket and
// micro-batch): plain, and with the topk residuals of every micro-batch's
// reduce-scatter (the same keys as full_buffer's) saved and restored.
TEST_F(CheckpointReshard, ShardGradientMemoryResumesBitExact) {
  Variant shard = plain();
  shard.name = "zero_gradient_memory shard";
  shard.gradient_memory = "shard";
  Variant lossy = error_feedback();
  lossy.name += ", zero_gradient_memory shard";
  lossy.gradient_memory = "shard";
  for (const Layout& l : {Layout{4, 1, 1, 2}, Layout{2, 2, 1, 3}, Layout{2, 1, 2, 3}})
    check_case(l, l, single_rank_, root_, shard);
  check_case(Layout{2, 1, 2, 2}, Layout{2, 1, 2, 2}, single_rank_, root_, lossy);
}

// Without its Q's, residuals and counters the resumed run would warm up
// again (a plain allreduce at step 3) and start from a fresh Q.
TEST_F(CheckpointReshard, PowerSgdResumesBitExact) {
  for (const Layout& l : {Layout{2, 1, 1, 0}, Layout{4, 1, 1, 1}}) {
    const auto result = check_case(l, l, single_rank_, root_, powersgd());
    if (world_rank() == 0) EXPECT_EQ(result.resume_notes, "") << l.name();
  }
}

TEST_F(CheckpointReshard, MixedPrecisionResumesBitExact) {
  for (const Layout& l : {Layout{2, 1, 1, 1}, Layout{1, 2, 2, 0}, Layout{2, 1, 1, 3}})
    check_case(l, l, single_rank_, root_, mixed_precision("bf16"));
  for (const Layout& l : {Layout{2, 1, 1, 0}, Layout{2, 1, 2, 2}})
    check_case(l, l, single_rank_, root_, mixed_precision("fp16"));
}

TEST_F(CheckpointReshard, DropoutResumesBitExact) {
  for (const Layout& l : {Layout{2, 1, 1, 0}, Layout{1, 2, 2, 1}, Layout{2, 2, 1, 3}})
    check_case(l, l, single_rank_, root_, dropout());
}

// fp16's loss scale is the same on every rank and means the same under any
// layout: a resharded resume carries it on (it doubles after every finite
// step here, so a scale restarted from loss_scale_initial would differ).
TEST_F(CheckpointReshard, MixedPrecisionReshardKeepsTheLossScale) {
  const Variant variant = mixed_precision("fp16");
  const Layout from{2, 1, 1, 1}, to{1, 2, 2, 0};
  const std::string dir = root_ + "/loss-scale";
  const auto original = on_ranks_of(from, variant.policy, [&](parallel::ProcessGroups& groups) {
    const auto config = test_config(dir + "/a", variant, from);
    trainer::Trainer t(config, groups, quiet());
    return t.run().loss_scales;
  });
  ASSERT_EQ(original.size(), size_t(kSteps));
  EXPECT_GT(original[kSaveAt], original[0]) << "the scale must have moved before the save";
  const auto resumed = on_ranks_of(to, variant.policy, [&](parallel::ProcessGroups& groups) {
    auto options = quiet();
    options.resume_path = dir + "/a/" + checkpoint::checkpoint_name(kSaveAt);
    const auto config = test_config(dir + "/b", variant, to);
    trainer::Trainer t(config, groups, options);
    return t.run().loss_scales;
  });
  const std::vector<double> after(original.begin() + kSaveAt, original.end());
  EXPECT_EQ(resumed, after) << from.name() << " -> " << to.name();
}

// Residual buffers belong to one rank of one layout (their keys and lengths
// follow its buckets and shards): a reshard drops them, says so, and trains on.
TEST_F(CheckpointReshard, ReshardDropsResidualsWithAWarning) {
  const auto result =
      check_case(Layout{2, 1, 1, 1}, Layout{4, 1, 1, 0}, single_rank_, root_, error_feedback());
  if (world_rank() == 0) {
    EXPECT_NE(result.resume_notes.find("error-feedback residual buffers"), std::string::npos)
        << result.resume_notes;
    EXPECT_NE(result.resume_notes.find("dropped"), std::string::npos) << result.resume_notes;
  }
}

// PowerSGD's state follows one rank's buckets too: a reshard restarts it and
// says so.
TEST_F(CheckpointReshard, PowerSgdReshardRestartsWithAWarning) {
  const auto result =
      check_case(Layout{2, 1, 1, 0}, Layout{4, 1, 1, 1}, single_rank_, root_, powersgd());
  if (world_rank() == 0)
    EXPECT_NE(result.resume_notes.find("PowerSGD's Q's and residuals"), std::string::npos)
        << result.resume_notes;
}

TEST_F(CheckpointReshard, DataParallelChanges) {
  check_axis(Axis::kDp, single_rank_, root_);
}

TEST_F(CheckpointReshard, TensorParallelChanges) {
  check_axis(Axis::kTp, single_rank_, root_);
}

TEST_F(CheckpointReshard, PipelineChanges) {
  check_axis(Axis::kPp, single_rank_, root_);
}

// A Llama checkpoint reshards as a GPT-2 one does: across tp (the key/value
// heads' groups), pp and dp with ZeRO stages, against its own single-rank run.
TEST_F(CheckpointReshard, LlamaChangesLayout) {
  auto config = test_config("", llama(), Layout{});
  config.checkpoint.every = 0;
  const auto single_rank = testing::single_rank_losses(config);
  check_case(Layout{2, 2, 2, 1}, Layout{1, 1, 1, 0}, single_rank, root_, llama());
  check_case(Layout{1, 2, 1, 0}, Layout{2, 1, 2, 3}, single_rank, root_, llama());
}

// A padded vocabulary table reshards across tp, whose padding changes
// (61 -> 62 -> 64 rows and back), and resumes bit-exactly under its own.
TEST_F(CheckpointReshard, PaddedVocabularyChangesLayout) {
  auto config = test_config("", odd_vocabulary(), Layout{});
  config.checkpoint.every = 0;
  const auto single_rank = testing::single_rank_losses(config);
  check_case(Layout{1, 2, 1, 0}, Layout{1, 2, 1, 0}, single_rank, root_, odd_vocabulary());
  check_case(Layout{1, 2, 2, 1}, Layout{2, 4, 1, 3}, single_rank, root_, odd_vocabulary());
  check_case(Layout{1, 4, 2, 0}, Layout{1, 1, 1, 0}, single_rank, root_, odd_vocabulary());
}

// Context parallelism: the same layout resumes bit for bit (also with
// dropout, whose per-cp-rank generators the checkpoint keeps), and a
// checkpoint moves between cp layouts and layouts without cp (ZeRO shards
// over dp x cp ranks on one side, over dp on the other).
TEST_F(CheckpointReshard, ContextParallelChanges) {
  check_case(Layout{2, 1, 1, 1, 2}, Layout{2, 1, 1, 1, 2}, single_rank_, root_);
  check_case(Layout{1, 2, 1, 0, 2}, Layout{1, 2, 1, 0, 2}, single_rank_, root_);
  check_case(Layout{1, 1, 1, 0, 2}, Layout{1, 1, 1, 0, 2}, single_rank_, root_, dropout());
  check_case(Layout{1, 2, 1, 0, 2}, Layout{1, 2, 1, 0, 2}, single_rank_, root_, dropout());
  check_case(Layout{1, 1, 1, 0, 4}, Layout{2, 2, 1, 2}, single_rank_, root_);
  check_case(Layout{2, 1, 1, 3}, Layout{1, 2, 1, 1, 2}, single_rank_, root_);
  check_case(Layout{2, 1, 2, 1, 2}, Layout{1, 1, 1, 0, 2}, single_rank_, root_);
}

TEST_F(CheckpointReshard, SeveralAxesAtOnce) {
  check_case(Layout{2, 2, 2, 2}, Layout{1, 1, 1, 0}, single_rank_, root_);
  check_case(Layout{1, 1, 1, 0}, Layout{2, 2, 2, 3}, single_rank_, root_);
  check_case(Layout{4, 1, 2, 1}, Layout{2, 1, 1, 3}, single_rank_, root_);
  check_case(Layout{1, 4, 1, 0}, Layout{2, 2, 1, 2}, single_rank_, root_);
  check_case(Layout{2, 1, 4, 3}, Layout{1, 2, 2, 1}, single_rank_, root_);
}

}  // namespace
}  // namespace cmpi
