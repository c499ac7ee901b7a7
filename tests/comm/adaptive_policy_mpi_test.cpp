// Preset auto on every rank count: the ranks of a group must take the same
// route even when what each measured differs wildly (one rank sees a fast
// link, the others a slow one; one rank's data compresses badly), because
// each decision comes from numbers the group agreed on. Each step the test
// gathers every rank's choice, requires them equal, and only then runs an
// allreduce through the chosen route (so that a disagreement fails the test
// instead of hanging it) and checks its sum.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "tests/support/test_seed.h"

namespace cmpi::comm {
namespace {

constexpr size_t kFloats = 64 << 10;  // 256 KiB: enough for a link sample

Policy auto_policy() {
  PolicyConfig config;
  config.preset = "auto";
  config.preset_locality = "any";
  config.min_bytes = 0;
  config.auto_settings.probe_every = 3;
  return Policy(config);
}

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// Every rank's index of the candidate chosen for dp allreduce gradient.
std::vector<int> gathered_choices(const Communicator& comm) {
  const auto* route = comm.policy()->route(Op::kAllreduce, Role::kGradient, kFloats * 4,
                                           comm.collective_locality());
  int mine = route != nullptr ? route->candidate : -1;
  std::vector<int> all(size_t(comm.size()));
  MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, comm.mpi());
  return all;
}

TEST(AdaptivePolicy, RanksOfAGroupAgreeWhateverEachMeasured) {
  const Policy policy = auto_policy();
  MPI_Comm comm_handle;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm_handle);
  Communicator comm(comm_handle, GroupKind::kDp,
                    std::make_unique<PolicySlice>(policy, GroupKind::kDp), /*node=*/world_rank());
  ASSERT_NE(comm.adaptive(), nullptr);
  const uint64_t seed = cmpi::testing::test_seed();
  std::mt19937_64 rng(seed + uint64_t(comm.rank()));
  std::normal_distribution<float> normal(0.f, 1e-3f);

  std::vector<double> links;
  for (int64_t step = 0; step < 8; ++step) {
    // Fake what this rank measured in the last period: rank 0 a link 10^5x
    // faster than the others; on odd steps the ranks swap roles. Alone, a
    // fast rank would stay raw and a slow one take a codec.
    const bool fast = (comm.rank() == 0) == (step % 2 == 0);
    const auto* route = comm.policy()->route(Op::kAllreduce, Role::kGradient, kFloats * 4,
                                             comm.collective_locality());
    ASSERT_NE(route, nullptr);
    AutoCallSample sample;
    sample.raw_bytes = sample.wire_bytes = 64 << 20;
    sample.seconds = fast ? 6.4e-5 : 6.4;  // 1 TB/s or 10 MB/s
    comm.adaptive()->record(*route, Op::kAllreduce, Role::kGradient, comm.collective_locality(),
                            sample);
    // This rank's data: smooth on rank 0, noise elsewhere (ratios differ).
    std::vector<float> data(kFloats);
    for (size_t i = 0; i < kFloats; ++i)
      data[i] = comm.rank() == 0 ? std::sin(float(i) * 1e-3f) * 1e-3f : normal(rng);
    comm.adaptive()->probe_if_due(*route, Op::kAllreduce, Role::kGradient,
                                  comm.collective_locality(), data.data(), data.size());

    const auto decisions = comm.adapt(step);
    const std::vector<int> choices = gathered_choices(comm);
    for (size_t r = 1; r < choices.size(); ++r)
      ASSERT_EQ(choices[r], choices[0])
          << "step " << step << ": rank " << r << " chose candidate " << choices[r]
          << ", rank 0 candidate " << choices[0] << " (seed " << seed << ")";
    for (const auto& d : decisions)
      if (d.op == Op::kAllreduce) links.push_back(d.link_mbit_s);

    // The route the group agreed on carries a real allreduce.
    std::vector<float> values(kFloats, float(comm.rank() + 1));
    comm.allreduce(values.data(), values.size(), Role::kGradient, /*buffer_key=*/7);
    const float expected = float(comm.size() * (comm.size() + 1) / 2);
    EXPECT_NEAR(values[0], expected, 0.05f * expected) << "step " << step;
    EXPECT_NEAR(values[kFloats - 1], expected, 0.05f * expected) << "step " << step;
  }
  // The agreed link is the best any rank saw (MAX): fast every step, though
  // most ranks measured a slow link.
  ASSERT_EQ(links.size(), 8u);
  for (double mbit_s : links) EXPECT_GT(mbit_s, 1e3) << "slow ranks saw ~84 Mbit/s";
}

TEST(AdaptivePolicy, SlowLinkEverywhereSwitchesEveryRankToACodec) {
  const Policy policy = auto_policy();
  MPI_Comm comm_handle;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm_handle);
  Communicator comm(comm_handle, GroupKind::kDp,
                    std::make_unique<PolicySlice>(policy, GroupKind::kDp), /*node=*/world_rank());
  if (comm.size() == 1) GTEST_SKIP() << "needs a group";
  const auto* route = comm.policy()->route(Op::kAllreduce, Role::kGradient, kFloats * 4,
                                           comm.collective_locality());
  std::vector<float> data(kFloats);
  for (size_t i = 0; i < kFloats; ++i) data[i] = std::sin(float(i) * 1e-2f) * 1e-3f;
  comm.adaptive()->probe_if_due(*route, Op::kAllreduce, Role::kGradient, comm.collective_locality(),
                                data.data(), data.size());
  AutoCallSample sample;
  sample.raw_bytes = sample.wire_bytes = 64 << 20;
  sample.seconds = 64.0 * (1 + comm.rank());  // ~1 MB/s, different on every rank
  comm.adaptive()->record(*route, Op::kAllreduce, Role::kGradient, comm.collective_locality(),
                          sample);
  const auto decisions = comm.adapt(1);
  const std::vector<int> choices = gathered_choices(comm);
  for (size_t r = 1; r < choices.size(); ++r) ASSERT_EQ(choices[r], choices[0]);
  EXPECT_GT(choices[0], 0) << "a 1 MB/s link should take a codec";
  ASSERT_FALSE(decisions.empty());
  EXPECT_TRUE(decisions[0].changed);
  EXPECT_NE(decisions[0].codec, "raw");
  // A real call through it.
  std::vector<float> values(kFloats, 1.f);
  comm.allreduce(values.data(), values.size(), Role::kGradient, 3);
  EXPECT_NEAR(values[kFloats / 2], float(comm.size()), 0.05f * float(comm.size()));
}

}  // namespace
}  // namespace cmpi::comm
