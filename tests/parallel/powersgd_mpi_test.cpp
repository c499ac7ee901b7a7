// PowerSGD (parallel/zero/powersgd_reducer.h) on 1, 2 and 4 ranks:
// - the reducer against direct computations: a summed gradient of rank <= r
//   comes back exact (to float rounding, on input whose projection on the
//   starting Q is well conditioned: well_conditioned_draw); rank >= min(n, m) equals the raw sum;
//   the result has rank <= r; raw tensors (and tensors marked raw) are summed
//   exactly; start_step steps are raw; without error feedback no residual;
//   five steps against PowerSGD written out in double; two allreduces per
//   bucket and step, their bytes and the reducer's codec time in CommStats;
// - error feedback: over several steps, the sum of the results plus every
//   rank's residual equals the sum of every gradient;
// - every rank ends with the same result, bit for bit;
// - through the data-parallel optimizer with a powersgd policy rule (ZeRO 0
//   and 1, overlap on and off): identical parameters on every rank, the wire
//   ratio in CommStats, the embedding table summed raw by default (the same
//   parameters as without the rule), and ZeRO 2 refused naming the rule.
#include <gtest/gtest.h>
#include <mpi.h>
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/policy_config.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/zero/data_parallel_optimizer.h"
#include "parallel/zero/powersgd_reducer.h"
#include "tests/support/mpi_world.h"
#include "tests/support/seeded_tensor.h"
#include "tests/support/test_seed.h"

namespace cmpi::parallel {
namespace {

using testing::world_rank;
using testing::world_size;

using testing::seeded_normal;

// Sum over ranks (double accumulation of float inputs, then float).
torch::Tensor summed(const torch::Tensor& local) {
  auto d = local.to(torch::kDouble).contiguous();
  MPI_Allreduce(MPI_IN_PLACE, d.data_ptr<double>(), int(d.numel()), MPI_DOUBLE, MPI_SUM,
                MPI_COMM_WORLD);
  return d;
}

double relative_error(const torch::Tensor& got, const torch::Tensor& want) {
  return (got.to(torch::kDouble) - want.to(torch::kDouble)).norm().item<double>() /
         want.to(torch::kDouble).norm().item<double>();
}

// Bit-identical on every rank: rank 0's bytes broadcast and compared.
bool same_on_every_rank(const torch::Tensor& t) {
  auto mine = t.contiguous().clone();
  auto root = mine.clone();
  MPI_Bcast(root.data_ptr<float>(), int(root.numel()), MPI_FLOAT, 0, MPI_COMM_WORLD);
  int equal = torch::equal(mine, root) ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &equal, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return equal == 1;
}

// One bucket of a 24x16 matrix, a 10-vector and a 12x3 matrix (unprofitable
// at r = 2: 2*(12+3) = 30 < 36 is profitable; at r = 4, 60 >= 36 is not).
struct Layout {
  std::vector<PowerSgdTensor> tensors{{0, 24, 16}, {384, 1, 10}, {394, 12, 3}};
  size_t floats = 394 + 36;
};

// The right factor (2 x cols) rank `rank_seed` draws for a rank-2 tensor
// with left factor `left`: draw `k` of seed rank_seed + offset.
torch::Tensor right_factor(const torch::Tensor& left, const std::vector<float>& q,
                           uint64_t rank_seed, uint64_t offset, uint64_t k) {
  const int64_t cols = int64_t(q.size()) / left.size(1);
  return seeded_normal({left.size(1), cols}, rank_seed + offset + k * 1000003);
}

// One power iteration recovers a summed gradient of rank <= r exactly in
// exact arithmetic; in float, to about 5e-8 x cond(M Q), M the sum and Q the
// reducer's starting factor (seed 26005396796985 drew cond 1310 and came back
// at 6.4e-5; conds below 130 stayed under 1e-5). The first draw k = 0, 1, ...
// of every rank's right factors (each rank computes all ranks' draws) whose
// sum gives cond(M Q) <= 30, so that the test's input is one the claim is
// about.
uint64_t well_conditioned_draw(const torch::Tensor& left, const std::vector<float>& q,
                               uint64_t seed, uint64_t offset) {
  const int64_t r = left.size(1), cols = int64_t(q.size()) / r;
  const auto start = torch::from_blob(const_cast<float*>(q.data()), {cols, r}).to(torch::kDouble);
  for (uint64_t k = 0;; ++k) {
    auto sum = torch::zeros({r, cols}, torch::kDouble);
    for (int w = 0; w < world_size(); ++w)
      sum += right_factor(left, q, seed + 100 * uint64_t(w + 1), offset, k).to(torch::kDouble);
    const auto singular = at::linalg_svdvals(left.to(torch::kDouble).mm(sum).mm(start));
    if ((singular[0] / singular[r - 1]).item().toDouble() <= 30) return k;
  }
}

PowerSgdReducer make_reducer(const Layout& layout, comm::Communicator& dp, int64_t rank,
                             bool everywhere = false, int64_t start_step = 0) {
  PowerSgdReducer::Options options;
  options.settings.rank = rank;
  options.settings.start_step = start_step;
  options.low_rank_everywhere = everywhere;
  return PowerSgdReducer(layout.tensors, {{0, 1, 2}}, options, dp);
}

TEST(PowerSgd, SummedGradientOfRankRComesBackExact) {
  const uint64_t seed = cmpi::testing::test_seed();
  comm::Communicator dp(MPI_COMM_WORLD, comm::GroupKind::kDp);
  Layout layout;
  auto reducer = make_reducer(layout, dp, 2);
  ASSERT_TRUE(reducer.low_rank(0));
  ASSERT_FALSE(reducer.low_rank(1));
  ASSERT_TRUE(reducer.low_rank(2));
  // Every rank's matrices share the left factor: their sum has rank 2.
  auto a = seeded_normal({24, 2}, seed);
  auto c = seeded_normal({12, 2}, seed + 1);
  auto flat = torch::empty({int64_t(layout.floats)});
  const uint64_t mine = seed + 100 * uint64_t(world_rank() + 1);
  const uint64_t first = well_conditioned_draw(a, reducer.q(0), seed, 0);
  const uint64_t third = well_conditioned_draw(c, reducer.q(2), seed, 2);
  flat.narrow(0, 0, 384).copy_(a.mm(right_factor(a, reducer.q(0), mine, 0, first)).reshape({-1}));
  // Integer-valued, so the raw sum is exact in any order.
  flat.narrow(0, 384, 10).copy_(torch::round(seeded_normal({10}, mine + 1) * 100));
  flat.narrow(0, 394, 36).copy_(c.mm(right_factor(c, reducer.q(2), mine, 2, third)).reshape({-1}));
  const auto want = summed(flat);
  reducer.reduce_bucket(0, flat.data_ptr<float>());
  EXPECT_LT(relative_error(flat.narrow(0, 0, 384), want.narrow(0, 0, 384)), 1e-5)
      << "seed " << seed;
  EXPECT_TRUE(torch::equal(flat.narrow(0, 384, 10), want.narrow(0, 384, 10).to(torch::kFloat)))
      << "raw tensor not summed exactly, seed " << seed;
  EXPECT_LT(relative_error(flat.narrow(0, 394, 36), want.narrow(0, 394, 36)), 1e-5)
      << "seed " << seed;
  EXPECT_TRUE(same_on_every_rank(flat)) << "seed " << seed;
  // Two factors of 24x2 + 16x2 and 12x2 + 3x2 plus the raw 10, not 430.
  EXPECT_EQ(reducer.message_floats(0), size_t(2 * (24 + 16) + 10 + 2 * (12 + 3)));
}

TEST(PowerSgd, FullRankEqualsTheRawSumAndLowRankIsRankR) {
  const uint64_t seed = cmpi::testing::test_seed() + 7;
  comm::Communicator dp(MPI_COMM_WORLD, comm::GroupKind::kDp);
  Layout layout;
  const uint64_t mine = seed + 100 * uint64_t(world_rank() + 1);
  const auto gradient = seeded_normal({int64_t(layout.floats)}, mine);
  const auto want = summed(gradient);
  {
    // r >= min(n, m) everywhere: the approximation is the sum itself.
    auto reducer = make_reducer(layout, dp, 16, /*everywhere=*/true);
    auto flat = gradient.clone();
    reducer.reduce_bucket(0, flat.data_ptr<float>());
    EXPECT_LT(relative_error(flat, want), 1e-5) << "seed " << seed;
    EXPECT_TRUE(same_on_every_rank(flat)) << "seed " << seed;
  }
  {
    // r = 3 on a full-rank sum: rank 3, and no better than the truncated SVD.
    auto reducer = make_reducer(layout, dp, 3);
    auto flat = gradient.clone();
    reducer.reduce_bucket(0, flat.data_ptr<float>());
    auto result = flat.narrow(0, 0, 384).reshape({24, 16}).to(torch::kDouble);
    auto singular = at::linalg_svdvals(result);
    EXPECT_LT(singular[3].item<double>(), 1e-5 * singular[0].item<double>()) << "seed " << seed;
    // It is the sum projected onto its own column space: U U^T sum.
    auto sum = want.narrow(0, 0, 384).reshape({24, 16});
    auto u = std::get<0>(at::linalg_svd(result, /*full_matrices=*/false)).narrow(1, 0, 3);
    EXPECT_LT(relative_error(result, u.mm(u.t().mm(sum))), 1e-5) << "seed " << seed;
    EXPECT_TRUE(same_on_every_rank(flat)) << "seed " << seed;
  }
}

TEST(PowerSgd, ErrorFeedbackMakesTheAccumulatedSumExact) {
  const uint64_t seed = cmpi::testing::test_seed() + 13;
  comm::Communicator dp(MPI_COMM_WORLD, comm::GroupKind::kDp);
  Layout layout;
  auto reducer = make_reducer(layout, dp, 1);
  auto results = torch::zeros({int64_t(layout.floats)}, torch::kDouble);
  auto gradients = torch::zeros({int64_t(layout.floats)}, torch::kDouble);
  for (int step = 0; step < 6; ++step) {
    auto flat = seeded_normal({int64_t(layout.floats)},
                              seed + 1000 * uint64_t(step) + 100 * uint64_t(world_rank() + 1));
    gradients += flat.to(torch::kDouble);
    reducer.reduce_bucket(0, flat.data_ptr<float>());
    EXPECT_TRUE(same_on_every_rank(flat)) << "step " << step << " seed " << seed;
    results += flat.to(torch::kDouble);
  }
  auto residuals = torch::zeros({int64_t(layout.floats)}, torch::kDouble);
  for (size_t t = 0; t < layout.tensors.size(); ++t) {
    if (!reducer.low_rank(t)) continue;
    const auto& e = reducer.residual(t);
    residuals.narrow(0, int64_t(layout.tensors[t].offset), int64_t(e.size()))
        .copy_(
            torch::from_blob(const_cast<float*>(e.data()), {int64_t(e.size())}).to(torch::kDouble));
  }
  const auto all_gradients = summed(gradients.to(torch::kFloat));
  const auto all_residuals = summed(residuals.to(torch::kFloat));
  // Rank 1 loses most of each step's sum, so the residuals are large: the
  // identity only holds because they are carried.
  EXPECT_GT(all_residuals.norm().item<double>(), 0.1 * all_gradients.norm().item<double>());
  EXPECT_LT(relative_error(results + all_residuals, all_gradients), 1e-5) << "seed " << seed;
}

TEST(PowerSgd, StartStepReductionsAreRaw) {
  const uint64_t seed = cmpi::testing::test_seed() + 17;
  comm::Communicator dp(MPI_COMM_WORLD, comm::GroupKind::kDp);
  Layout layout;
  auto reducer = make_reducer(layout, dp, 1, false, /*start_step=*/2);
  for (int step = 0; step < 3; ++step) {
    auto flat = torch::round(seeded_normal({int64_t(layout.floats)},
                                           seed + 1000 * uint64_t(step) + uint64_t(world_rank())) *
                             64);
    const auto want = summed(flat).to(torch::kFloat);
    reducer.reduce_bucket(0, flat.data_ptr<float>());
    EXPECT_EQ(torch::equal(flat, want), step < 2) << "step " << step << " seed " << seed;
  }
}

TEST(PowerSgd, WithoutErrorFeedbackKeepsNoResidualAndDropsWhatItMisses) {
  const uint64_t seed = cmpi::testing::test_seed() + 19;
  comm::Communicator dp(MPI_COMM_WORLD, comm::GroupKind::kDp);
  Layout layout;
  PowerSgdReducer::Options options;
  options.settings.rank = 1;
  auto with_feedback = PowerSgdReducer(layout.tensors, {{0, 1, 2}}, options, dp);
  options.settings.error_feedback = false;
  auto without = PowerSgdReducer(layout.tensors, {{0, 1, 2}}, options, dp);
  EXPECT_LT(without.state_bytes(), with_feedback.state_bytes());
  for (int step = 0; step < 2; ++step) {
    auto a = seeded_normal({int64_t(layout.floats)},
                           seed + 1000 * uint64_t(step) + 100 * uint64_t(world_rank() + 1));
    auto b = a.clone();
    with_feedback.reduce_bucket(0, a.data_ptr<float>());
    without.reduce_bucket(0, b.data_ptr<float>());
    EXPECT_TRUE(same_on_every_rank(b)) << "step " << step << " seed " << seed;
    // Step 0: nothing carried yet, so the same result; step 1: only the
    // reducer with feedback adds what step 0 missed.
    EXPECT_EQ(torch::equal(a, b), step == 0) << "step " << step << " seed " << seed;
  }
  for (size_t t = 0; t < layout.tensors.size(); ++t) EXPECT_TRUE(without.residual(t).empty());
}

TEST(PowerSgd, TensorsMarkedRawAreSummedExactly) {
  const uint64_t seed = cmpi::testing::test_seed() + 21;
  comm::Communicator dp(MPI_COMM_WORLD, comm::GroupKind::kDp);
  Layout layout;
  layout.tensors[0].raw = true;  // the 24x16 matrix, low-rank otherwise
  auto reducer = make_reducer(layout, dp, 2);
  EXPECT_FALSE(reducer.low_rank(0));
  EXPECT_TRUE(reducer.low_rank(2));
  auto flat = torch::round(
      seeded_normal({int64_t(layout.floats)}, seed + 100 * uint64_t(world_rank() + 1)) * 64);
  const auto want = summed(flat).to(torch::kFloat);
  reducer.reduce_bucket(0, flat.data_ptr<float>());
  EXPECT_TRUE(torch::equal(flat.narrow(0, 0, 384), want.narrow(0, 0, 384))) << "seed " << seed;
}

// Per bucket and step: one allreduce of the raw tensors with the P's, one
// of the Q's (the warm-up steps: one raw allreduce); CommStats counts
// exactly those messages as sent, the whole bucket as raw, and the
// reducer's own arithmetic as codec time inside the calls' seconds.
TEST(PowerSgd, TwoAllreducesPerBucketAndTheirBytesInCommStats) {
  const uint64_t seed = cmpi::testing::test_seed() + 29;
  comm::Communicator dp(MPI_COMM_WORLD, comm::GroupKind::kDp);
  Layout layout;
  PowerSgdReducer::Options options;
  options.settings.rank = 2;
  options.settings.start_step = 1;
  // Bucket 0: the 24x16 matrix and the 10-vector; bucket 1: the 12x3 matrix.
  PowerSgdReducer reducer(layout.tensors, {{0, 1}, {2}}, options, dp);
  const int rank = dp.rank(), size = dp.size();
  const auto ring = [&](size_t floats) { return comm::ring_allreduce_bytes(floats, rank, size); };
  const comm::OpCounters& counters = dp.stats().at(comm::Op::kAllreduce);
  for (int step = 0; step < 3; ++step) {
    auto flat = seeded_normal({int64_t(layout.floats)},
                              seed + 1000 * uint64_t(step) + 100 * uint64_t(world_rank() + 1));
    dp.stats().reset();
    reducer.reduce_bucket(0, flat.data_ptr<float>());
    reducer.reduce_bucket(1, flat.data_ptr<float>());
    const std::string what = "step " + std::to_string(step) + " seed " + std::to_string(seed);
    EXPECT_EQ(counters.raw_bytes, ring(394) + ring(36)) << what;
    if (step == 0) {
      EXPECT_EQ(counters.calls, 2u) << what;
      EXPECT_EQ(counters.compressed_calls, 0u) << what;
      EXPECT_EQ(counters.wire_bytes, ring(394) + ring(36)) << what;
      EXPECT_EQ(counters.encode_seconds + counters.decode_seconds, 0.0) << what;
      continue;
    }
    EXPECT_EQ(counters.calls, 4u) << what;
    EXPECT_EQ(counters.compressed_calls, 2u) << what;
    // P's: 10 raw + 24x2, then 12x2; Q's: 16x2, then 3x2.
    EXPECT_EQ(counters.wire_bytes, ring(10 + 48) + ring(32) + ring(24) + ring(6)) << what;
    EXPECT_EQ(reducer.message_floats(0), size_t(10 + 48 + 32)) << what;
    EXPECT_GT(counters.encode_seconds, 0.0) << what;
    EXPECT_GT(counters.decode_seconds, 0.0) << what;
    EXPECT_GE(counters.seconds, counters.encode_seconds + counters.decode_seconds) << what;
  }
}

// Modified Gram-Schmidt on the columns of p (double).
torch::Tensor orthonormal_columns(torch::Tensor p) {
  p = p.clone();
  for (int64_t j = 0; j < p.size(1); ++j) {
    auto column = p.select(1, j);
    for (int64_t k = 0; k < j; ++k) column -= column.dot(p.select(1, k)) * p.select(1, k);
    column /= column.norm();
  }
  return p;
}

// Five steps of the reducer (warm start, error feedback) against PowerSGD
// written out in double on whole tensors: P = sum_w (M_w + e_w) Q, P^ its
// orthonormal columns, Q_w = D_w^T P^, e_w = D_w - P^ Q_w^T, result P^ sum_w Q_w^T,
// Q carried to the next step. Results and residuals agree to float rounding.
TEST(PowerSgd, StepsMatchPowerSgdComputedInDouble) {
  const uint64_t seed = cmpi::testing::test_seed() + 31;
  comm::Communicator dp(MPI_COMM_WORLD, comm::GroupKind::kDp);
  Layout layout;
  auto reducer = make_reducer(layout, dp, 2);
  struct Reference {
    size_t tensor;
    int64_t rows, cols;
    torch::Tensor q, residual;
  };
  std::vector<Reference> references;
  for (size_t t : {size_t(0), size_t(2)}) {
    const auto& x = layout.tensors[t];
    const auto& q = reducer.q(t);
    references.push_back(
        {t, int64_t(x.rows), int64_t(x.cols),
         torch::from_blob(const_cast<float*>(q.data()), {int64_t(x.cols), 2}).to(torch::kDouble),
         torch::zeros({int64_t(x.rows), int64_t(x.cols)}, torch::kDouble)});
  }
  for (int step = 0; step < 5; ++step) {
    auto flat = seeded_normal({int64_t(layout.floats)},
                              seed + 1000 * uint64_t(step) + 100 * uint64_t(world_rank() + 1));
    const auto gradient = flat.to(torch::kDouble);
    reducer.reduce_bucket(0, flat.data_ptr<float>());
    const std::string what = "step " + std::to_string(step) + " seed " + std::to_string(seed);
    EXPECT_LT(relative_error(flat.narrow(0, 384, 10), summed(gradient.narrow(0, 384, 10))), 1e-6)
        << what;
    for (Reference& ref : references) {
      const auto& x = layout.tensors[ref.tensor];
      const auto d =
          gradient.narrow(0, int64_t(x.offset), ref.rows * ref.cols).view({ref.rows, ref.cols}) +
          ref.residual;
      const auto p = orthonormal_columns(summed(d.mm(ref.q)));
      const auto q_local = d.t().mm(p);
      ref.residual = d - p.mm(q_local.t());
      ref.q = summed(q_local);
      const auto result = p.mm(ref.q.t());
      EXPECT_LT(relative_error(flat.narrow(0, int64_t(x.offset), ref.rows * ref.cols),
                               result.reshape({-1})),
                1e-4)
          << "tensor " << ref.tensor << ", " << what;
      const auto& e = reducer.residual(ref.tensor);
      EXPECT_LT(relative_error(torch::from_blob(const_cast<float*>(e.data()), {ref.rows, ref.cols}),
                               ref.residual),
                1e-4)
          << "residual of tensor " << ref.tensor << ", " << what;
    }
  }
}

TEST(PowerSgd, EmbeddingTablesAreTheTokenPositionAndHeadTables) {
  EXPECT_TRUE(is_embedding_table("token_embedding.weight"));
  EXPECT_TRUE(is_embedding_table("position_embedding.weight"));
  EXPECT_TRUE(is_embedding_table("output_head.weight"));
  EXPECT_FALSE(is_embedding_table("block0.attention.qkv.weight"));
  EXPECT_FALSE(is_embedding_table("block3.fc_in.weight"));
}

// ------------------------------------------------ through the optimizer

comm::PolicyConfig powersgd_policy(int64_t rank, const std::string& raw_embeddings = "true") {
  comm::PolicyConfig policy;
  comm::PolicyRule rule;
  rule.match.groups = {comm::GroupKind::kDp};
  rule.match.ops = {comm::Op::kAllreduce};
  rule.match.roles = {comm::Role::kGradient};
  rule.match.min_bytes = 0;
  rule.codec = compress::CodecSpec(
      "powersgd", {{"rank", std::to_string(rank)}, {"raw_embeddings", raw_embeddings}});
  rule.origin = "test rule";
  policy.rules.push_back(rule);
  return policy;
}

struct Trained {
  std::vector<float> parameters;
  comm::OpCounters allreduce;
};

// Four optimizer steps of a loss linear in every parameter, with seeded
// coefficients that differ per step, dp rank and parameter.
void train_four_steps(const std::vector<ParamInfo>& params, DataParallelOptimizer& optimizer,
                      const ProcessGroups& groups, uint64_t seed) {
  for (int step = 0; step < 4; ++step) {
    optimizer.zero_grad();
    optimizer.before_forward();
    torch::Tensor loss = torch::zeros({});
    for (size_t i = 0; i < params.size(); ++i)
      loss = loss + (params[i].tensor * seeded_normal(params[i].tensor.sizes().vec(),
                                                      seed ^ (uint64_t(step) << 32) ^
                                                          (uint64_t(groups.coord().dp) << 16) ^ i))
                        .sum();
    optimizer.begin_last_micro_batch();
    loss.backward();
    optimizer.step(1e-2, 1.0);
  }
}

Trained train(int stage, bool overlap, uint64_t seed) {
  ParallelDims dims;
  dims.dp = world_size();
  ProcessGroups groups(MPI_COMM_WORLD, dims, powersgd_policy(2));
  DataParallelOptimizerOptions options;
  options.zero_stage = stage;
  options.overlap_grad_reduce = overlap;
  options.bucket_bytes = 2048 * dims.dp;  // several buckets, cutting through parameters
  std::vector<ParamInfo> params = {
      {"w1", seeded_normal({32, 24}, seed).requires_grad_(true), false, true},
      {"b1", seeded_normal({32}, seed + 1).requires_grad_(true), false, false},
      {"w2", seeded_normal({16, 4, 8}, seed + 2).requires_grad_(true), false, true},
      {"w3", seeded_normal({40, 20}, seed + 3).requires_grad_(true), false, true}};
  auto optimizer = make_data_parallel_optimizer(params, options, groups);
  train_four_steps(params, *optimizer, groups, seed);
  Trained out;
  for (auto& p : params) {
    auto flat = p.tensor.detach().reshape({-1});
    out.parameters.insert(out.parameters.end(), flat.data_ptr<float>(),
                          flat.data_ptr<float>() + flat.numel());
  }
  out.allreduce = groups.dp().stats().at(comm::Op::kAllreduce);
  return out;
}

TEST(PowerSgd, OptimizerKeepsEveryRankIdenticalAndCountsTheWireRatio) {
  if (world_size() < 2) GTEST_SKIP() << "needs dp > 1";
  const uint64_t seed = cmpi::testing::test_seed() + 23;
  for (int stage : {0, 1}) {
    const Trained threaded = train(stage, true, seed);
    const Trained inline_ = train(stage, false, seed);
    const std::string what = "stage " + std::to_string(stage) + " seed " + std::to_string(seed);
    auto params = torch::from_blob(const_cast<float*>(threaded.parameters.data()),
                                   {int64_t(threaded.parameters.size())});
    EXPECT_TRUE(same_on_every_rank(params)) << what;
    EXPECT_EQ(threaded.parameters, inline_.parameters) << what << ": overlap changed the result";
    // 2 allreduces per bucket and step; w1 32x24 at r 2 sends 112 of 768.
    EXPECT_GT(threaded.allreduce.compressed_calls, 0u) << what;
    EXPECT_GT(threaded.allreduce.ratio(), 2.0) << what;
  }
}

// Four steps of a token table and a bias through the optimizer under a
// powersgd rule (raw_embeddings as given) or none: the final parameters.
std::vector<float> train_embedding(const std::string& raw_embeddings, bool powersgd,
                                   uint64_t seed) {
  ParallelDims dims;
  dims.dp = world_size();
  ProcessGroups groups(MPI_COMM_WORLD, dims,
                       powersgd ? powersgd_policy(2, raw_embeddings) : comm::PolicyConfig());
  DataParallelOptimizerOptions options;
  std::vector<ParamInfo> params = {
      {"token_embedding.weight", seeded_normal({40, 24}, seed).requires_grad_(true), false, true},
      {"final_norm.bias", seeded_normal({24}, seed + 1).requires_grad_(true), false, false}};
  auto optimizer = make_data_parallel_optimizer(params, options, groups);
  train_four_steps(params, *optimizer, groups, seed);
  std::vector<float> out;
  for (auto& p : params) {
    auto flat = p.tensor.detach().reshape({-1});
    out.insert(out.end(), flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel());
  }
  return out;
}

TEST(PowerSgd, EmbeddingGradientsTravelRawByDefault) {
  if (world_size() < 2) GTEST_SKIP() << "needs dp > 1";
  const uint64_t seed = cmpi::testing::test_seed() + 29;
  const std::vector<float> plain = train_embedding("true", false, seed);
  EXPECT_EQ(train_embedding("true", true, seed), plain)
      << "raw_embeddings: true must train the token table as the uncompressed run, seed " << seed;
  EXPECT_NE(train_embedding("false", true, seed), plain)
      << "raw_embeddings: false must approximate it, seed " << seed;
}

TEST(PowerSgd, OptimizerRefusesZeroStage2NamingTheRule) {
  if (world_size() < 2) GTEST_SKIP() << "needs dp > 1";
  try {
    train(2, false, 1);
    FAIL() << "stage 2 accepted a powersgd rule";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("test rule: powersgd needs"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace cmpi::parallel
