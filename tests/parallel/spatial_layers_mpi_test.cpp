// Spatial layers on 2 and 4 ranks against the single-rank layer: every rank
// builds the whole input, weights and upstream gradient from the shared
// seed, runs the reference on the whole image, and compares its own tiles
// of the output, of the input gradient (border pixels included) and the
// sp-summed parameter gradients. Image sizes give uneven tiles on every
// slicing. Conv: kernel 1/3/5/7, stride 1/2, padding 0 and k/2, dilation
// 1/2; max and average pooling likewise (valid combinations); BatchNorm in
// train mode; a small network through gather_tiles; mpc on the sp halos
// bit-identical to the raw path; named errors before any message.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/policy.h"
#include "parallel/spatial/halo_exchange_op.h"
#include "parallel/spatial/sp_reductions.h"
#include "parallel/spatial/spatial_batch_norm.h"
#include "parallel/spatial/spatial_global_pool.h"
#include "parallel/spatial/spatial_window_layers.h"
#include "parallel/spatial/tile_gather.h"
#include "tests/support/mpi_world.h"
#include "tests/support/test_seed.h"

namespace cmpi::parallel::spatial {
namespace {

using cmpi::testing::test_seed;
using cmpi::testing::world_size;

// Uneven on every slicing of 2 and 4 ranks, and every halo fits a tile.
constexpr int64_t kHeight = 55, kWidth = 51, kBatch = 2;

std::unique_ptr<comm::Communicator> make_sp(const comm::Policy* policy = nullptr) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  if (policy == nullptr) return std::make_unique<comm::Communicator>(comm, comm::GroupKind::kSp);
  return std::make_unique<comm::Communicator>(
      comm, comm::GroupKind::kSp,
      std::make_unique<comm::PolicySlice>(*policy, comm::GroupKind::kSp));
}

std::vector<Slicing> slicings() {
  if (world_size() == 4) return {Slicing::kSquare, Slicing::kVertical, Slicing::kHorizontal};
  return {Slicing::kVertical, Slicing::kHorizontal};
}

// Same data on every rank: the shared seed plus the case number.
void seed_case(uint64_t test_case) {
  torch::manual_seed(test_seed() * 7919 + test_case);
}

// max |got - want| within tol * max(1, max |want|).
void expect_close(const torch::Tensor& got, const torch::Tensor& want, const std::string& what,
                  double tol = 2e-5) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const double scale = std::max(1.0, want.abs().max().item<double>());
  const double err = (got - want).abs().max().item<double>();
  EXPECT_LE(err, tol * scale) << what << ": max error " << err << " (scale " << scale << "), seed "
                              << test_seed();
}

struct Reference {
  torch::Tensor input, output, upstream;  // whole images
};

// Runs the spatial `layer` on this rank's tile and compares output and
// input gradient with the reference, whose input already holds its grad.
template <typename Layer>
void compare_tiles(Layer& layer, const Reference& ref, const TileGrid& in_grid,
                   const TileGrid& out_grid, comm::Communicator& sp, const std::string& what) {
  const int me = sp.rank();
  torch::Tensor tile = tile_of(ref.input.detach(), in_grid, me).clone().requires_grad_(true);
  torch::Tensor out = layer->forward(tile);
  expect_close(out, tile_of(ref.output.detach(), out_grid, me), what + ": output tile");
  (out * tile_of(ref.upstream, out_grid, me)).sum().backward();
  expect_close(tile.grad(), tile_of(ref.input.grad(), in_grid, me), what + ": input gradient");
}

TEST(SpatialConv2d, EveryWindowEqualsTheSingleRankLayer) {
  auto sp = make_sp();
  uint64_t test_case = 0;
  for (Slicing slicing : slicings())
    for (int64_t k : {1, 3, 5, 7})
      for (int64_t s : {1, 2})
        for (int64_t p : {int64_t(0), k / 2}) {
          if (k == 1 && p != 0) continue;
          for (int64_t d : {1, 2})
            for (bool with_bias : {true, false}) {
              if (k == 1 && d == 2) continue;
              if (!with_bias && (k != 3 || d != 1)) continue;
              const Window w{k, s, p, d};
              const std::string what = std::string(to_string(slicing)) + ", " + w.describe() +
                                       (with_bias ? "" : ", no bias");
              SCOPED_TRACE(what);
              seed_case(++test_case);
              Reference ref;
              ref.input = torch::randn({kBatch, 3, kHeight, kWidth}).requires_grad_(true);
              auto weight = torch::randn({4, 3, k, k}).requires_grad_(true);
              auto bias = torch::randn({4}).requires_grad_(true);
              ref.output = torch::conv2d(ref.input, weight, with_bias ? bias : torch::Tensor(),
                                         {s, s}, {p, p}, {d, d});
              ref.upstream = torch::randn(ref.output.sizes());
              (ref.output * ref.upstream).sum().backward();

              const TileGrid grid(kHeight, kWidth, sp->size(), slicing);
              SpatialConv2d conv(3, 4, w, with_bias, grid, *sp, "conv");
              {
                torch::NoGradGuard no_grad;
                conv->weight.copy_(weight);
                if (with_bias) conv->bias.copy_(bias);
              }
              ASSERT_EQ(conv->output_grid().height(), ref.output.size(2));
              ASSERT_EQ(conv->output_grid().width(), ref.output.size(3));
              compare_tiles(conv, ref, grid, conv->output_grid(), *sp, what);
              allreduce_spatial_gradients(conv->parameters(), *sp);
              expect_close(conv->weight.grad(), weight.grad(), what + ": weight gradient", 5e-5);
              if (with_bias)
                expect_close(conv->bias.grad(), bias.grad(), what + ": bias gradient", 5e-5);
            }
        }
  EXPECT_GE(test_case, 2u * 26u);
}

TEST(SpatialPool2d, MaxAndAverageEqualTheSingleRankLayer) {
  auto sp = make_sp();
  uint64_t test_case = 1000;
  for (Slicing slicing : slicings())
    for (int64_t k : {1, 3, 5, 7})
      for (int64_t s : {1, 2})
        for (int64_t p : {int64_t(0), k / 2})
          for (int64_t d : {1, 2})
            for (bool max_pool : {true, false}) {
              if ((k == 1 && (p != 0 || d == 2)) || (!max_pool && d == 2)) continue;
              const Window w{k, s, p, d};
              const std::string what = std::string(to_string(slicing)) +
                                       (max_pool ? " max pool, " : " avg pool, ") + w.describe();
              SCOPED_TRACE(what);
              seed_case(++test_case);
              Reference ref;
              // Negative values too: -inf padding must not be mistaken for zeros.
              ref.input = (torch::randn({kBatch, 2, kHeight, kWidth}) - 1).requires_grad_(true);
              ref.output = max_pool ? torch::max_pool2d(ref.input, {k, k}, {s, s}, {p, p}, {d, d})
                                    : torch::avg_pool2d(ref.input, {k, k}, {s, s}, {p, p});
              ref.upstream = torch::randn(ref.output.sizes());
              (ref.output * ref.upstream).sum().backward();
              const TileGrid grid(kHeight, kWidth, sp->size(), slicing);
              if (max_pool) {
                SpatialMaxPool2d pool(w, grid, *sp, "pool");
                compare_tiles(pool, ref, grid, pool->output_grid(), *sp, what);
              } else {
                SpatialAvgPool2d pool(w, grid, *sp, "pool");
                compare_tiles(pool, ref, grid, pool->output_grid(), *sp, what);
              }
            }
}

TEST(SpatialBatchNorm2d, TrainModeForwardAndBackwardEqualTheSingleRankLayer) {
  auto sp = make_sp();
  uint64_t test_case = 2000;
  for (Slicing slicing : slicings()) {
    SCOPED_TRACE(to_string(slicing));
    seed_case(++test_case);
    Reference ref;
    ref.input = (torch::randn({kBatch, 3, kHeight, kWidth}) * 2 + 0.5).requires_grad_(true);
    auto weight = torch::randn({3}).requires_grad_(true);
    auto bias = torch::randn({3}).requires_grad_(true);
    auto running_mean = torch::zeros({3}), running_var = torch::ones({3});
    ref.output = torch::batch_norm(ref.input, weight, bias, running_mean, running_var, true, 0.1,
                                   1e-5, false);
    ref.upstream = torch::randn(ref.output.sizes());
    (ref.output * ref.upstream).sum().backward();
    const TileGrid grid(kHeight, kWidth, sp->size(), slicing);
    SpatialBatchNorm2d bn(3, *sp);
    {
      torch::NoGradGuard no_grad;
      bn->weight.copy_(weight);
      bn->bias.copy_(bias);
    }
    compare_tiles(bn, ref, grid, grid, *sp, "batch norm");
    allreduce_spatial_gradients(bn->parameters(), *sp);
    expect_close(bn->weight.grad(), weight.grad(), "gamma gradient", 5e-5);
    expect_close(bn->bias.grad(), bias.grad(), "beta gradient", 5e-5);
    expect_close(bn->running_mean, running_mean, "running mean");
    expect_close(bn->running_var, running_var, "running variance");
    // Eval mode normalises with the running statistics, locally.
    bn->eval();
    const torch::Tensor tile = tile_of(ref.input.detach(), grid, sp->rank());
    expect_close(bn->forward(tile),
                 tile_of(torch::batch_norm(ref.input.detach(), weight.detach(), bias.detach(),
                                           running_mean, running_var, false, 0.1, 1e-5, false),
                         grid, sp->rank()),
                 "eval mode");
  }
}

TEST(SpatialGather, RoundTripIsExactAndBackwardKeepsTheOwnTile) {
  auto sp = make_sp();
  for (Slicing slicing : slicings()) {
    SCOPED_TRACE(to_string(slicing));
    seed_case(3000 + uint64_t(slicing));
    const torch::Tensor image = torch::randn({kBatch, 3, kHeight, kWidth});
    const TileGrid grid(kHeight, kWidth, sp->size(), slicing);
    torch::Tensor tile = tile_of(image, grid, sp->rank()).clone().requires_grad_(true);
    torch::Tensor gathered = gather_tiles(tile, grid, *sp);
    EXPECT_TRUE(torch::equal(gathered, image));
    const torch::Tensor upstream = torch::randn(image.sizes());
    (gathered * upstream).sum().backward();
    EXPECT_TRUE(torch::equal(tile.grad(), tile_of(upstream, grid, sp->rank())));
  }
}

TEST(SpatialGather, ToRootGivesTheRootTheImageAndScattersItsGradient) {
  auto sp = make_sp();
  for (Slicing slicing : slicings())
    for (int root : {0, sp->size() - 1}) {
      SCOPED_TRACE(std::string(to_string(slicing)) + ", root " + std::to_string(root));
      seed_case(3100 + uint64_t(slicing) * 10 + uint64_t(root));
      const torch::Tensor image = torch::randn({kBatch, 3, kHeight, kWidth});
      const torch::Tensor upstream = torch::randn(image.sizes());
      const TileGrid grid(kHeight, kWidth, sp->size(), slicing);
      torch::Tensor tile = tile_of(image, grid, sp->rank()).clone().requires_grad_(true);
      torch::Tensor gathered = gather_tiles_to_root(tile, grid, *sp, root);
      if (sp->rank() == root) {
        EXPECT_TRUE(torch::equal(gathered, image));
        (gathered * upstream).sum().backward();
      } else {
        EXPECT_EQ(gathered.numel(), 0);
        torch::autograd::backward({gathered}, {torch::zeros({0})});
      }
      ASSERT_TRUE(tile.grad().defined());
      EXPECT_TRUE(torch::equal(tile.grad(), tile_of(upstream, grid, sp->rank())));
    }
}

// conv -> BN -> relu -> max pool -> conv (stride 2) -> gather -> loss, the
// single-rank run and the spatial run from the same weights.
struct SmallNet {
  torch::Tensor w1, b1, gamma, beta, w2;
};

SmallNet make_net() {
  return {torch::randn({4, 3, 3, 3}) * 0.3, torch::randn({4}), torch::rand({4}) + 0.5,
          torch::randn({4}), torch::randn({2, 4, 5, 5}) * 0.2};
}

torch::Tensor reference_net(const SmallNet& n, const torch::Tensor& x) {
  auto h = torch::conv2d(x, n.w1, n.b1, 1, 1);
  h = torch::batch_norm(h, n.gamma, n.beta, {}, {}, true, 0.1, 1e-5, false).relu();
  h = torch::max_pool2d(h, {3, 3}, {2, 2}, {1, 1});
  return torch::conv2d(h, n.w2, {}, 2, 2);
}

// Lazy: the layers get only the slicing and infer their grids from the
// tiles at the first forward (as a layer factory builds them).
struct SpatialNet {
  SpatialNet(const SmallNet& n, const TileGrid& grid, comm::Communicator& sp, bool lazy = false)
      : conv1(lazy ? SpatialConv2d(3, 4, Window{3, 1, 1, 1}, true, grid.slicing(), sp, "conv1", 1)
                   : SpatialConv2d(3, 4, Window{3, 1, 1, 1}, true, grid, sp, "conv1", 1)),
        bn(4, sp, 1e-5, 0.1, 2),
        pool(lazy ? SpatialMaxPool2d(Window{3, 2, 1, 1}, grid.slicing(), sp, "pool", 3)
                  : SpatialMaxPool2d(Window{3, 2, 1, 1}, conv1->output_grid(), sp, "pool", 3)),
        conv2(lazy ? SpatialConv2d(4, 2, Window{5, 2, 2, 1}, false, grid.slicing(), sp, "conv2", 4)
                   : SpatialConv2d(4, 2, Window{5, 2, 2, 1}, false, pool->output_grid(), sp,
                                   "conv2", 4)),
        sp_(sp) {
    torch::NoGradGuard no_grad;
    conv1->weight.copy_(n.w1);
    conv1->bias.copy_(n.b1);
    bn->weight.copy_(n.gamma);
    bn->bias.copy_(n.beta);
    conv2->weight.copy_(n.w2);
  }
  torch::Tensor forward(const torch::Tensor& tile) {
    auto h = pool->forward(bn->forward(conv1->forward(tile)).relu());
    auto out = conv2->forward(h);  // a lazy conv2 knows its grid from here on
    return gather_tiles(out, conv2->output_grid(), sp_, 5);
  }
  std::vector<torch::Tensor> parameters() const {
    std::vector<torch::Tensor> all;
    for (const auto& p : conv1->parameters()) all.push_back(p);
    for (const auto& p : bn->parameters()) all.push_back(p);
    for (const auto& p : conv2->parameters()) all.push_back(p);
    return all;
  }
  SpatialConv2d conv1;
  SpatialBatchNorm2d bn;
  SpatialMaxPool2d pool;
  SpatialConv2d conv2;
  comm::Communicator& sp_;
};

TEST(SpatialNetwork, ThroughGatherEqualsTheSingleRankRun) {
  auto sp = make_sp();
  for (Slicing slicing : slicings())
    for (bool lazy : {false, true}) {
      SCOPED_TRACE(std::string(to_string(slicing)) + (lazy ? ", grids inferred" : ", grids given"));
      seed_case(4000 + uint64_t(slicing));
      const SmallNet weights = make_net();
      SmallNet ref_weights = weights;
      for (auto* t : {&ref_weights.w1, &ref_weights.b1, &ref_weights.gamma, &ref_weights.beta,
                      &ref_weights.w2})
        *t = t->clone().requires_grad_(true);
      const torch::Tensor x = torch::randn({kBatch, 3, kHeight, kWidth}).requires_grad_(true);
      const torch::Tensor ref_out = reference_net(ref_weights, x);
      const torch::Tensor upstream = torch::randn(ref_out.sizes());
      (ref_out * upstream).sum().backward();

      const TileGrid grid(kHeight, kWidth, sp->size(), slicing);
      SpatialNet net(weights, grid, *sp, lazy);
      torch::Tensor tile = tile_of(x.detach(), grid, sp->rank()).clone().requires_grad_(true);
      const torch::Tensor out = net.forward(tile);
      expect_close(out, ref_out.detach(), "gathered output", 5e-5);
      // The tail is replicated: every rank computes the same loss from the
      // whole image; its tile of the image gradient is its share.
      (out * upstream).sum().backward();
      expect_close(tile.grad(), tile_of(x.grad(), grid, sp->rank()), "input gradient", 5e-5);
      allreduce_spatial_gradients(net.parameters(), *sp);
      const auto params = net.parameters();
      const std::vector<torch::Tensor> ref_params{ref_weights.w1, ref_weights.b1, ref_weights.gamma,
                                                  ref_weights.beta, ref_weights.w2};
      ASSERT_EQ(params.size(), ref_params.size());
      // conv1's bias (parameter 1) feeds BatchNorm, which subtracts the batch
      // mean: its gradient is zero analytically, so both sides hold only the
      // rounding of sums over every pixel, summed in different orders here.
      for (size_t i = 0; i < params.size(); ++i)
        expect_close(params[i].grad(), ref_params[i].grad(), "parameter " + std::to_string(i),
                     i == 1 ? 1e-3 : 1e-4);
    }
}

// Global average pool into a classifier replicated over sp: the means, the
// input gradient and the classifier's (not sp-summed) gradient equal the
// single-rank run.
TEST(SpatialGlobalAvgPool, FeedsAReplicatedClassifier) {
  auto sp = make_sp();
  for (Slicing slicing : slicings()) {
    SCOPED_TRACE(to_string(slicing));
    seed_case(6000 + uint64_t(slicing));
    const torch::Tensor x = torch::randn({kBatch, 3, kHeight, kWidth}).requires_grad_(true);
    const torch::Tensor fc = torch::randn({5, 3});
    const torch::Tensor upstream = torch::randn({kBatch, 5});
    const torch::Tensor ref_fc = fc.clone().requires_grad_(true);
    const torch::Tensor ref_out = torch::linear(x.mean({2, 3}), ref_fc);
    (ref_out * upstream).sum().backward();

    const TileGrid grid(kHeight, kWidth, sp->size(), slicing);
    SpatialGlobalAvgPool pool(*sp);
    const torch::Tensor my_fc = fc.clone().requires_grad_(true);
    torch::Tensor tile = tile_of(x.detach(), grid, sp->rank()).clone().requires_grad_(true);
    const torch::Tensor out = torch::linear(pool->forward(tile), my_fc);
    expect_close(out, ref_out.detach(), "classifier output");
    (out * upstream).sum().backward();
    expect_close(tile.grad(), tile_of(x.grad(), grid, sp->rank()), "input gradient");
    expect_close(my_fc.grad(), ref_fc.grad(), "classifier gradient");
  }
}

// mpc (lossless) on the sp group's halos: outputs and every gradient bit for
// bit those of the raw path, and the halos did go through the codec.
TEST(SpatialNetwork, LosslessHaloCodecIsBitIdenticalToRaw) {
  comm::PolicyConfig config;
  comm::PolicyRule rule;
  rule.match.groups = {comm::GroupKind::kSp};
  rule.match.roles = {comm::Role::kHalo};
  rule.match.min_bytes = 0;
  rule.codec = compress::CodecSpec("mpc");
  rule.origin = "test rule: sp halo mpc";
  config.rules.push_back(rule);
  config.chunk_bytes = 4096;  // several chunks per halo
  const comm::Policy policy(config);
  auto raw = make_sp();
  auto mpc = make_sp(&policy);
  for (Slicing slicing : slicings()) {
    SCOPED_TRACE(to_string(slicing));
    seed_case(5000 + uint64_t(slicing));
    const SmallNet weights = make_net();
    const torch::Tensor x = torch::randn({kBatch, 3, kHeight, kWidth});
    const torch::Tensor upstream = torch::randn({kBatch, 2, 14, 13});
    const TileGrid grid(kHeight, kWidth, raw->size(), slicing);
    std::vector<torch::Tensor> results[2];
    int run = 0;
    for (comm::Communicator* sp : {raw.get(), mpc.get()}) {
      SpatialNet net(weights, grid, *sp);
      torch::Tensor tile = tile_of(x, grid, sp->rank()).clone().requires_grad_(true);
      const torch::Tensor out = net.forward(tile);
      ASSERT_EQ(out.sizes(), upstream.sizes());
      (out * upstream).sum().backward();
      allreduce_spatial_gradients(net.parameters(), *sp);
      results[run].push_back(out.detach());
      results[run].push_back(tile.grad());
      for (const auto& p : net.parameters()) results[run].push_back(p.grad());
      ++run;
    }
    for (size_t i = 0; i < results[0].size(); ++i)
      EXPECT_TRUE(torch::equal(results[0][i], results[1][i])) << "tensor " << i;
  }
  EXPECT_GT(mpc->stats().at(comm::Op::kHalo).compressed_calls, 0u);
  EXPECT_EQ(raw->stats().at(comm::Op::kHalo).compressed_calls, 0u);
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Every rank raises the same error before sending anything, so nothing hangs
// (the barrier at the end proves the ranks are still in step).
TEST(SpatialErrors, AreNamedAndRaisedOnEveryRankBeforeAnyMessage) {
  auto sp = make_sp();
  std::string e = error_of([&] { TileGrid(kHeight, kWidth, 2, Slicing::kSquare); });
  EXPECT_TRUE(contains(e, "square number") && contains(e, "parallel.spatial_slicing")) << e;
  // On 4 row slabs of 3 rows this conv needs 6 halo rows from a 3-row tile;
  // on 2 slabs no halo can exceed the other half, so there it does not fit.
  const TileGrid small(12, 12, sp->size(), Slicing::kHorizontal);
  const bool four = sp->size() >= 4;
  const Window stem = four ? Window{7, 1, 3, 2} : Window{7, 1, 0, 2};
  e = error_of([&] { SpatialConv2d(3, 4, stem, true, small, *sp, "stem.conv"); });
  EXPECT_TRUE(contains(e, "layer stem.conv") &&
              contains(e, four ? "tile smaller than the halo" : "does not fit"))
      << e;
  const TileGrid other(kHeight, kWidth, sp->size() * 2, Slicing::kVertical);
  e = error_of([&] { SpatialMaxPool2d(Window{3, 2, 1, 1}, other, *sp, "pool1"); });
  EXPECT_TRUE(contains(e, "layer pool1") && contains(e, "parallel.spatial")) << e;
  e = error_of([&] {  // tiles that are not one image's balanced split
    SpatialConv2d lazy(3, 4, Window{3, 1, 1, 1}, true, Slicing::kVertical, *sp, "lazy.conv");
    lazy->forward(torch::zeros({1, 3, 8, sp->rank() == 0 ? 20 : 5}));
  });
  EXPECT_TRUE(contains(e, "input of layer lazy.conv") && contains(e, "sp rank 0") &&
              contains(e, "balanced"))
      << e;
  e = error_of([&] { SpatialAvgPool2d(Window{3, 1, 1, 2}, small, *sp, "avg"); });
  EXPECT_TRUE(contains(e, "layer avg") && contains(e, "dilation")) << e;
  const TileGrid grid(kHeight, kWidth, sp->size(), Slicing::kVertical);
  SpatialConv2d conv(3, 4, Window{3, 1, 1, 1}, true, grid, *sp, "block2.conv");
  e = error_of([&] { conv->forward(torch::zeros({1, 3, kHeight, kWidth})); });
  EXPECT_TRUE(contains(e, "layer block2.conv") && contains(e, "sp rank")) << e;
  sp->barrier();
}

}  // namespace
}  // namespace cmpi::parallel::spatial
