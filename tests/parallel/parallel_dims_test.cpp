// ParallelDims::resolve: auto data size, and an error naming the group for
// each way a layout can fail the world or the model. The mesh table (kMesh):
// rank arithmetic against the documented formula for every coordinate of
// many layouts, and the order, names and groups it declares.
#include <gtest/gtest.h>

#include <vector>

#include "parallel/mesh/parallel_dims.h"

namespace cmpi::parallel {
namespace {

ModelShape gpt(int64_t layers = 4, int64_t heads = 8) {
  ModelShape m;
  m.layers = layers;
  m.heads = heads;
  m.hidden = 64;
  m.vocab_size = 256;
  m.seq_len = 24;
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

// Every coordinate of every layout with sizes up to 3 per dimension (cp up
// to 2): rank_of is the documented formula (written out here, not read from
// kMesh), coord_of inverts it, and the ranks cover the world once each.
TEST(ParallelDims, EveryCoordinateFollowsTheDocumentedRankFormula) {
  for (int dp = 1; dp <= 3; ++dp)
    for (int tp = 1; tp <= 3; ++tp)
      for (int pp = 1; pp <= 3; ++pp)
        for (int sp = 1; sp <= 3; ++sp)
          for (int cp = 1; cp <= 2; ++cp) {
            ParallelDims d;
            d.dp = dp;
            d.tp = tp;
            d.pp = pp;
            d.sp = sp;
            d.cp = cp;
            SCOPED_TRACE(d.to_string());
            ASSERT_EQ(d.world_size(), dp * tp * pp * sp * cp);
            std::vector<int> seen(size_t(d.world_size()), 0);
            for (int cpp = 0; cpp < pp; ++cpp)
              for (int cd = 0; cd < dp; ++cd)
                for (int cs = 0; cs < sp; ++cs)
                  for (int cc = 0; cc < cp; ++cc)
                    for (int ct = 0; ct < tp; ++ct) {
                      GridCoord c;
                      c.tp = ct;
                      c.cp = cc;
                      c.sp = cs;
                      c.dp = cd;
                      c.pp = cpp;
                      const int rank = d.rank_of(c);
                      ASSERT_EQ(rank, ct + tp * (cc + cp * (cs + sp * (cd + dp * cpp))));
                      const GridCoord back = d.coord_of(rank);
                      EXPECT_EQ(back.tp, ct);
                      EXPECT_EQ(back.cp, cc);
                      EXPECT_EQ(back.sp, cs);
                      EXPECT_EQ(back.dp, cd);
                      EXPECT_EQ(back.pp, cpp);
                      ++seen[size_t(rank)];
                    }
            for (int r = 0; r < d.world_size(); ++r) EXPECT_EQ(seen[size_t(r)], 1) << "rank " << r;
          }
}

TEST(ParallelDims, MeshDeclaresOrderNamesAndGroups) {
  const std::vector<MeshDim> rank_order(kMeshRankOrder.begin(), kMeshRankOrder.end());
  EXPECT_EQ(rank_order, (std::vector<MeshDim>{MeshDim::kTp, MeshDim::kCp, MeshDim::kSp,
                                              MeshDim::kDp, MeshDim::kPp}));
  std::vector<std::string> names, keys;
  for (const MeshDimInfo& d : kMesh) {
    names.push_back(comm::to_string(d.group));
    keys.push_back(d.config_key);
    EXPECT_EQ(mesh_dim_of(d.group), &d);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"dp", "tp", "pp", "sp", "cp"}));
  EXPECT_EQ(keys, (std::vector<std::string>{"data", "tensor", "pipeline", "spatial", "context"}));
  EXPECT_EQ(mesh_dim_of(comm::GroupKind::kZero), &mesh_dim(MeshDim::kDp));
  EXPECT_EQ(mesh_dim_of(comm::GroupKind::kWorld), nullptr);

  ParallelDims d;
  d.dp = 2;
  d.tp = 3;
  d.pp = 4;
  d.sp = 5;
  d.cp = 6;
  d.zero_stage = 1;
  EXPECT_EQ(d.to_string(), "dp=2 tp=3 pp=4 sp=5 cp=6 zero=1");
  EXPECT_EQ(ParallelDims{}.to_string(), "dp=1 tp=1 pp=1 sp=1 cp=1 zero=0");
}

// The sized resolve is the positional one's table-driven form.
TEST(ParallelDims, ResolveBySizesMatchesThePositionalForm) {
  MeshSizes sizes{};
  sizes[size_t(MeshDim::kDp)] = 0;
  sizes[size_t(MeshDim::kTp)] = 2;
  sizes[size_t(MeshDim::kPp)] = 2;
  sizes[size_t(MeshDim::kSp)] = 1;
  sizes[size_t(MeshDim::kCp)] = 1;
  EXPECT_EQ(ParallelDims::resolve(sizes, 1, 8, gpt()).to_string(),
            ParallelDims::resolve(0, 2, 2, 1, 1, 8, gpt()).to_string());
}

// Context parallelism: auto data takes what tp x cp leave; the sequence must
// cut into 2 x cp chunks, and a model without a sequence refuses cp.
TEST(ParallelDims, ContextDimension) {
  MeshSizes sizes{0, 2, 1, 1, 2};
  const ParallelDims d = ParallelDims::resolve(sizes, 0, 8, gpt());
  EXPECT_EQ(d.dp, 2);
  EXPECT_EQ(d.cp, 2);
  EXPECT_EQ(d.coord_of(2).cp, 1);  // tp is fastest, then cp
  const auto error = [&](int64_t cp, const ModelShape& m) {
    MeshSizes s{0, 1, 1, 1, cp};
    try {
      ParallelDims::resolve(s, 0, int(cp), m);
    } catch (const LayoutError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error(3, gpt()), "");  // 24 positions in 6 chunks
  EXPECT_EQ(error(5, gpt()),
            "cp group: model.seq_len (24) is not divisible by 2 x parallel.context (10): each "
            "context rank holds two of 2 x context equal chunks of every sequence");
  ModelShape image = gpt();
  image.image_rows = 32;
  image.seq_len = 0;
  EXPECT_EQ(error(2, image),
            "cp group: parallel.context = 2 but the model has no sequence to split (a ResNet "
            "needs context: 1)");
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

// The texts users see, word for word (they are built from kMesh's rows;
// "= 2 = 6 ranks" is the text as it was before the table).
TEST(ParallelDims, ErrorTextsAreExact) {
  EXPECT_EQ(error_of(0, 4, 1, 1, 0, 6, gpt()),
            "dp group: world size 6 is not divisible by tensor(4) x pipeline(1) x spatial(1) x "
            "context(1) = 4, so parallel.data: auto has no whole value");
  EXPECT_EQ(error_of(3, 2, 1, 1, 0, 4, gpt()),
            "dp group: data(3) x tensor(2) x pipeline(1) x spatial(1) x context(1) = 2 = 6 "
            "ranks, but the world has 4");
  EXPECT_EQ(error_of(1, 1, 0, 1, 0, 1, gpt()), "pp group: parallel.pipeline must be >= 1, got 0");
  EXPECT_EQ(error_of(1, 1, 1, 2, 0, 2, gpt()),
            "sp group: parallel.spatial = 2 but the model has no spatial dimension to split (a "
            "GPT needs spatial: 1)");
  EXPECT_EQ(error_of(1, 1, 8, 1, 0, 8, gpt(4)),
            "pp group: model.layers (4) < parallel.pipeline (8): every stage needs at least one "
            "layer");
  EXPECT_EQ(error_of(1, 1, 1, 1, 4, 1, gpt()),
            "zero group: parallel.zero_stage must be 0, 1, 2 or 3, got 4");
}

}  // namespace
}  // namespace cmpi::parallel
