// ParallelDims::resolve: auto data size, and an error naming the group for
// each way a layout can fail the world or the model.
#include <gtest/gtest.h>

#include "parallel/parallel_dims.h"

namespace cmpi::parallel {
namespace {

ModelShape gpt(int64_t layers = 4, int64_t heads = 8) {
  ModelShape m;
  m.layers = layers;
  m.heads = heads;
  m.hidden = 64;
  m.vocab_size = 256;
  return m;
}

std::string error_of(int64_t data, int64_t tp, int64_t pp, int64_t sp, int64_t zero, int world,
                     const ModelShape& m) {
  try {
    ParallelDims::resolve(data, tp, pp, sp, zero, world, m);
  } catch (const LayoutError& e) {
    return e.what();
  }
  return "";
}

TEST(ParallelDims, AutoDataTakesWhatIsLeft) {
  auto d = ParallelDims::resolve(0, 2, 2, 1, 1, 8, gpt());
  EXPECT_EQ(d.dp, 2);
  EXPECT_EQ(d.tp, 2);
  EXPECT_EQ(d.pp, 2);
  EXPECT_EQ(d.zero_stage, 1);
  EXPECT_EQ(d.world_size(), 8);
}

TEST(ParallelDims, CoordinatesRoundTrip) {
  ParallelDims d;
  d.dp = 2;
  d.tp = 3;
  d.pp = 2;
  d.sp = 2;
  for (int r = 0; r < d.world_size(); ++r) EXPECT_EQ(d.rank_of(d.coord_of(r)), r);
  auto c = d.coord_of(1);  // tp is fastest
  EXPECT_EQ(c.tp, 1);
  EXPECT_EQ(c.sp, 0);
}

TEST(ParallelDims, ErrorsNameTheGroup) {
  EXPECT_NE(error_of(0, 4, 1, 1, 0, 6, gpt()).find("dp group"), std::string::npos);
  EXPECT_NE(error_of(3, 2, 1, 1, 0, 4, gpt()).find("dp group"), std::string::npos);
  EXPECT_NE(error_of(1, 3, 1, 1, 0, 3, gpt(4, 8)).find("tp group: model.heads"), std::string::npos);
  EXPECT_NE(error_of(1, 1, 8, 1, 0, 8, gpt(4)).find("pp group: model.layers"), std::string::npos);
  EXPECT_NE(error_of(1, 1, 1, 2, 0, 2, gpt()).find("sp group"), std::string::npos);
  EXPECT_NE(error_of(1, 1, 1, 1, 4, 1, gpt()).find("zero group"), std::string::npos);
  EXPECT_NE(error_of(1, 0, 1, 1, 0, 1, gpt()).find("tp group: parallel.tensor must be >= 1"),
            std::string::npos);
}

}  // namespace
}  // namespace cmpi::parallel
