// Training on indexed datasets (data.kind indexed): a blend of two random
// datasets, with validation loss. Parallelism must not change what is seen:
// dp2, dp4, pp2 (validation forward through the pipeline), ZeRO-3 on dp4 and
// pp2 x dp2 under ZeRO-3 (validation on gathered parameters) reproduce the
// single-rank training and validation losses within a relative 1e-5 (only
// the order of float sums differs). Bad data
// stops every rank with the same error naming the key and the file.
#include <gtest/gtest.h>
#include <mpi.h>

#include <array>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "config/config_loader.h"
#include "data/indexed_dataset_builder.h"
#include "data/token_source.h"
#include "parallel/mesh/process_groups.h"
#include "tests/support/test_seed.h"
#include "tests/support/tiny_gpt_run.h"

namespace cmpi::trainer {
namespace {

using cmpi::testing::expect_same_trajectory;

constexpr double kTolerance = 1e-5;

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// A scratch directory all ranks share (rank 0 creates and removes it).
class SharedDir {
 public:
  explicit SharedDir(uint64_t seed)
      : path_(
            (std::filesystem::temp_directory_path() / ("cmpi_indexed_mpi_" + std::to_string(seed)))
                .string()) {
    if (world_rank() == 0) {
      std::filesystem::remove_all(path_);
      std::filesystem::create_directories(path_);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  ~SharedDir() {
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0) std::filesystem::remove_all(path_);
  }
  std::string path(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Documents of 5-60 tokens below `vocab`, each ending in token 0 (as an
// end-of-document token would); text-like enough to learn: each token is
// often its predecessor + 1.
void write_dataset(const std::string& prefix, uint64_t seed, int documents, int32_t vocab) {
  if (world_rank() != 0) return;
  std::mt19937_64 rng(seed);
  data::IndexedDatasetBuilder builder(prefix, data::TokenDtype::kUInt16);
  for (int d = 0; d < documents; ++d) {
    std::vector<int32_t> tokens(5 + rng() % 56);
    int32_t token = int32_t(1 + rng() % (vocab - 1));
    for (auto& t : tokens) {
      token = rng() % 4 ? 1 + token % (vocab - 1) : int32_t(1 + rng() % (vocab - 1));
      t = token;
    }
    tokens.back() = 0;
    builder.add_document(tokens);
  }
  builder.finalize();
}

TEST(IndexedData, DataParallelReproducesTheSingleRankTrainingAndValidationLosses) {
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  ASSERT_EQ(world % 4, 0) << "run this test on 4 ranks";
  const uint64_t seed = cmpi::testing::test_seed() % 100000;
  SharedDir dir(seed);
  write_dataset(dir.path("a"), seed, 120, 64);
  write_dataset(dir.path("b"), seed + 1, 40, 64);
  MPI_Barrier(MPI_COMM_WORLD);

  config::Config config = cmpi::testing::tiny_gpt_config(seed);
  config.parallel.dp_bucket_bytes = 16 << 10;
  config.data.kind = config::DataKind::kIndexed;
  config.data.paths = {dir.path("a"), dir.path("b")};
  config.data.weights = {2, 1};
  config.data.split = {0.8, 0.2};
  config.eval.every = 5;
  config.eval.batches = 2;

  cmpi::testing::TinyGptRun reference;
  reference.losses.resize(size_t(config.training.steps));
  std::vector<double> reference_val(2);
  if (world_rank() == 0) {
    reference = cmpi::testing::train_tiny_gpt(MPI_COMM_SELF, config, parallel::ParallelDims{});
    ASSERT_EQ(reference.val_losses.size(), 2u);
    EXPECT_EQ(reference.val_losses[0].first, 5);
    EXPECT_EQ(reference.val_losses[1].first, 10);
    for (size_t i = 0; i < 2; ++i) reference_val[i] = reference.val_losses[i].second;
  }
  MPI_Bcast(reference.losses.data(), int(reference.losses.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Bcast(reference_val.data(), 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  EXPECT_LT(reference.losses.back(), reference.losses.front()) << "the 1-rank run should learn";
  EXPECT_LT(reference_val[1], reference_val[0]) << "and generalise to held-out documents";

  for (const auto& [dp, pp, zero] :
       {std::array<int, 3>{2, 1, 0}, std::array<int, 3>{4, 1, 0}, std::array<int, 3>{1, 2, 0},
        std::array<int, 3>{4, 1, 3}, std::array<int, 3>{2, 2, 3}}) {
    parallel::ParallelDims dims;
    dims.dp = dp;
    dims.pp = pp;
    dims.zero_stage = zero;
    config::Config layout_config = config;
    layout_config.parallel.data = dp;
    layout_config.parallel.pipeline = pp;
    layout_config.parallel.zero_stage = zero;
    const auto run = cmpi::testing::train_in_groups_of(dp * pp, layout_config, dims);
    const std::string what = dims.to_string() + " (seed " + std::to_string(seed) + ")";
    expect_same_trajectory(reference.losses, run.losses, kTolerance, what);
    std::vector<double> val;
    for (const auto& [step, loss] : run.val_losses) val.push_back(loss);
    expect_same_trajectory(reference_val, val, kTolerance, what + " validation");
  }
}

TEST(IndexedData, BadDataStopsEveryRankWithTheKeyAndTheFile) {
  const uint64_t seed = cmpi::testing::test_seed() % 100000 + 7;
  SharedDir dir(seed);
  write_dataset(dir.path("wide"), seed, 30, 300);
  MPI_Barrier(MPI_COMM_WORLD);
  config::Config config = cmpi::testing::tiny_gpt_config(seed);
  config.source = "run.yaml";
  config.data.kind = config::DataKind::kIndexed;

  const auto error_of = [&](const config::Config& c) -> std::string {
    try {
      data::open_token_source(c.data, data::token_demand(c), MPI_COMM_WORLD, nullptr);
    } catch (const config::ConfigError& e) {
      return e.what();
    }
    return "";
  };
  config.data.paths = {dir.path("wide"), dir.path("missing")};
  std::string message = error_of(config);
  EXPECT_NE(message.find("run.yaml: data.paths[1]: " + dir.path("missing") + ".idx"),
            std::string::npos)
      << message;

  config.data.paths = {dir.path("wide")};
  message = error_of(config);
  EXPECT_NE(message.find("data.paths[0]: " + dir.path("wide") + ".bin: tokens"), std::string::npos)
      << message;
  EXPECT_NE(message.find("model.vocab_size = 64"), std::string::npos) << message;

  config.model.vocab_size = 300;
  config.model.seq_len = 100000;
  message = error_of(config);
  EXPECT_NE(message.find("data.split: the train split of data.paths[0]"), std::string::npos)
      << message;
  EXPECT_NE(message.find("fewer than model.seq_len + 1 = 100001"), std::string::npos) << message;
}

}  // namespace
}  // namespace cmpi::trainer
