// A vocabulary that tp does not divide (model.vocab_multiple): the embedding
// and head tables are padded to a multiple of vocab_multiple x tp rows, and
// the padded rows must change nothing a user sees. Checked here:
//   - the padded logits are -inf on the rank that holds them, and the padded
//     rows get a zero gradient (they never win a softmax, nor learn);
//   - every layout (tp2, tp4 where the heads allow, dp2 x tp2 with ZeRO-3, tp2 x pp2, tp2 with
//     sequence parallelism) reproduces the unpadded single-rank run's loss
//     trajectory, for the tied GPT-2 table and GPT-NeoX's untied head, with
//     the padding of vocab_multiple 1 (one row) and 8 (several rows, the last
//     rank's slice mostly padding), within the float-sum-order tolerance of
//     the other layout tests.
// Checkpoints across paddings are checkpoint_reshard_vocab_np8's; exports
// without the padding, hf_export_reference_padded.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "comm/policy_config.h"
#include "models/family/gpt_family.h"
#include "models/gpt.h"
#include "parallel/mesh/process_groups.h"
#include "tests/support/mpi_world.h"
#include "tests/support/test_seed.h"
#include "tests/support/tiny_gpt_run.h"

namespace cmpi::trainer {
namespace {

using cmpi::testing::dims_of;
using cmpi::testing::expect_same_trajectory;
using cmpi::testing::train_in_groups_of;
using cmpi::testing::with_zero;

constexpr double kTolerance = 1e-5;
constexpr double kZero3Tolerance = 1e-4;  // zero3_layer_mpi_test says why
constexpr int64_t kOddVocabulary = 61;    // prime: every tp > 1 pads it

config::Config odd_vocabulary(config::Config c, int64_t multiple) {
  c.model.vocab_size = kOddVocabulary;
  c.model.vocab_multiple = multiple;
  return c;
}

// The first two ranks of the world as a tp2 group: rank 1 holds the table's
// last rows, among them the padding.
TEST(VocabPadding, PaddedLogitsAreMinusInfinityAndTheirRowsDoNotLearn) {
  ASSERT_GE(cmpi::testing::world_size(), 2) << "run this test on at least 2 ranks";
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm pair;
  MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
  if (pair == MPI_COMM_NULL) return;
  const uint64_t seed = cmpi::testing::test_seed() % 100000;
  const auto config = odd_vocabulary(cmpi::testing::tiny_neox_config(seed), 8);
  parallel::ProcessGroups groups(pair, dims_of(1, 2), comm::PolicyConfig{});
  models::GptOptions options = models::gpt_options(config.model);
  const int64_t rows = options.padded_vocab_size(2) / 2;  // 64 / 2
  ASSERT_EQ(rows, 32);
  models::Gpt model(options, groups);
  const auto tokens = torch::randint(kOddVocabulary, {2, 16}, torch::kLong);
  const auto logits = model->forward(tokens);
  ASSERT_EQ(logits.size(-1), rows);
  const int64_t first_id = rank * rows;
  for (int64_t column = 0; column < rows; ++column) {
    const bool padded = first_id + column >= kOddVocabulary;
    const auto values = logits.select(-1, column);
    if (padded)
      EXPECT_TRUE((values == -std::numeric_limits<float>::infinity()).all().item<bool>())
          << "rank " << rank << " id " << first_id + column << " (seed " << seed << ")";
    else
      EXPECT_TRUE(torch::isfinite(values).all().item<bool>())
          << "rank " << rank << " id " << first_id + column << " (seed " << seed << ")";
  }
  // Targets over the whole vocabulary, the last id included.
  auto targets = torch::randint(kOddVocabulary, {2, 16}, torch::kLong);
  targets[0][0] = kOddVocabulary - 1;
  model->loss(tokens, targets).backward();
  for (const auto& name : {"token_embedding.weight", "output_head.weight"}) {
    const auto grad = model->named_parameters()[name].grad();
    ASSERT_TRUE(grad.defined()) << name;
    const int64_t used = std::max<int64_t>(0, std::min(rows, kOddVocabulary - first_id));
    EXPECT_GT(grad.narrow(0, 0, used).abs().sum().item<double>(), 0.0) << name;
    EXPECT_EQ(grad.narrow(0, used, rows - used).abs().sum().item<double>(), 0.0)
        << name << ": padded rows of rank " << rank << " got a gradient";
  }
  MPI_Comm_free(&pair);
}

void expect_layouts_match_single_rank(const config::Config& config, const std::string& what) {
  const uint64_t seed = config.run.seed;
  const std::vector<double> reference = cmpi::testing::single_rank_losses(config);
  ASSERT_LT(reference.back(), reference.front()) << what << ": the 1-rank run should learn";
  const auto expect = [&](int group, const config::Config& c, const parallel::ParallelDims& dims,
                          double tolerance, const std::string& layout) {
    expect_same_trajectory(reference, train_in_groups_of(group, c, dims).losses, tolerance,
                           what + " " + layout + " (seed " + std::to_string(seed) + ")");
  };
  expect(2, config, dims_of(1, 2), kTolerance, "tp2");
  if (config.model.heads % 4 == 0) expect(4, config, dims_of(1, 4), kTolerance, "tp4");
  expect(4, with_zero(config, 3), dims_of(2, 2, 1, 3), kZero3Tolerance, "dp2 x tp2 zero3");
  expect(4, config, dims_of(1, 2, 2), kTolerance, "tp2 x pp2");
  auto sequence_parallel = config;
  sequence_parallel.parallel.sequence_parallel = true;
  expect(2, sequence_parallel, dims_of(1, 2), kTolerance, "tp2 + SP");
}

TEST(VocabPadding, TiedTableOfOnePaddedRowMatchesTheSingleRankRun) {
  ASSERT_EQ(cmpi::testing::world_size() % 4, 0) << "run this test on 4 ranks";
  const uint64_t seed = cmpi::testing::test_seed() % 100000;
  expect_layouts_match_single_rank(odd_vocabulary(cmpi::testing::tiny_gpt_config(seed), 1),
                                   "GPT-2 tied, vocab_multiple 1");
}

TEST(VocabPadding, UntiedHeadPaddedToEightsMatchesTheSingleRankRun) {
  ASSERT_EQ(cmpi::testing::world_size() % 4, 0) << "run this test on 4 ranks";
  const uint64_t seed = cmpi::testing::test_seed() % 100000;
  expect_layouts_match_single_rank(odd_vocabulary(cmpi::testing::tiny_neox_config(seed), 8),
                                   "GPT-NeoX untied, vocab_multiple 8");
}

}  // namespace
}  // namespace cmpi::trainer
