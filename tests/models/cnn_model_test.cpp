// The CNN family: the layer plan's shapes are what the modules produce, the
// parameter count matches, every convolution/BatchNorm/pool comes from the
// factory (so a spatial factory can replace them), and a model cut into
// pipeline stages computes exactly what the whole model does.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>
#include <map>
#include <string>

#include "models/cnn/cnn_stage.h"
#include "models/cnn/conv_layer_factory.h"
#include "models/cnn/resnet_plan.h"
#include "tests/support/counting_allocator.h"
#include "tests/support/test_seed.h"

namespace cmpi::models {
namespace {

ResnetOptions small_resnet(uint64_t seed) {
  ResnetOptions o;
  o.depth = 20;  // n = 2: 8 layers
  o.width = 4;
  o.image_size = 15;  // odd: the stride-2 groups round up
  o.channels = 3;
  o.classes = 5;
  o.seed = seed;
  return o;
}

// Counts what the model asks for, then builds the plain modules.
class CountingFactory final : public ConvLayerFactory {
 public:
  mutable std::map<std::string, int> calls;
  torch::nn::AnyModule conv2d(const Conv2dSpec& spec) const override {
    ++calls["conv" + std::to_string(spec.kernel)];
    return local_.conv2d(spec);
  }
  torch::nn::AnyModule batch_norm(int64_t channels) const override {
    ++calls["bn"];
    return local_.batch_norm(channels);
  }
  torch::nn::AnyModule max_pool(int64_t k, int64_t s, int64_t p) const override {
    ++calls["max_pool"];
    return local_.max_pool(k, s, p);
  }
  torch::nn::AnyModule avg_pool(int64_t k, int64_t s, int64_t p) const override {
    ++calls["avg_pool"];
    return local_.avg_pool(k, s, p);
  }
  torch::nn::AnyModule global_avg_pool() const override {
    ++calls["global_pool"];
    return local_.global_avg_pool();
  }

 private:
  LocalConvLayerFactory local_;
};

TEST(ResnetPlan, DepthGivesLayersAndBadOptionsAreNamed) {
  EXPECT_EQ(resnet_layer_count(11), 5);
  EXPECT_EQ(resnet_layer_count(110), 38);
  ResnetOptions o;
  o.depth = 12;
  EXPECT_NE(resnet_options_error(o).find("depth"), std::string::npos);
  o = {};
  o.classes = 1;
  EXPECT_NE(resnet_options_error(o).find("classes"), std::string::npos);
  EXPECT_THROW(resnet_layers(o), std::invalid_argument);
}

TEST(ResnetPlan, ShapesAndParameterCountMatchTheModules) {
  const uint64_t seed = cmpi::testing::test_seed();
  const auto options = small_resnet(seed);
  const auto plan = resnet_layers(options);
  ASSERT_EQ(plan.size(), 8u);
  CountingFactory factory;
  torch::manual_seed(seed);
  auto x = torch::randn({2, options.channels, options.image_size, options.image_size});
  int64_t parameters = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    CnnStage layer(plan, int64_t(i), int64_t(i) + 1, factory, seed);
    for (const auto& info : layer->param_infos()) parameters += info.tensor.numel();
    x = layer->forward(x);
    const auto& spec = plan[i];
    if (spec.kind == CnnLayerSpec::Kind::kHead) {
      EXPECT_EQ(x.sizes(), torch::IntArrayRef({2, options.classes})) << "layer " << i;
    } else {
      EXPECT_EQ(x.sizes(), torch::IntArrayRef({2, spec.out_channels, spec.out_size, spec.out_size}))
          << "layer " << i;
    }
  }
  EXPECT_EQ(plan.back().in_size, 4) << "15 -> 8 -> 4";
  EXPECT_EQ(parameters, resnet_parameter_count(options));
  // 6 blocks of 1x1, 3x3, 1x1 and three projections (group 1 widens, groups
  // 2 and 3 stride); the stem's 3x3; BatchNorms 3 per block + the head's.
  EXPECT_EQ(factory.calls["conv3"], 6 + 1);
  EXPECT_EQ(factory.calls["conv1"], 12 + 3);
  EXPECT_EQ(factory.calls["bn"], 18 + 1);
  EXPECT_EQ(factory.calls["global_pool"], 1);
}

TEST(CnnStage, StagesComposeToTheWholeModel) {
  const uint64_t seed = cmpi::testing::test_seed();
  const auto options = small_resnet(seed);
  const auto plan = resnet_layers(options);
  LocalConvLayerFactory factory;
  CnnStage whole(plan, 0, int64_t(plan.size()), factory, seed);
  CnnStage front(plan, 0, 3, factory, seed), back(plan, 3, int64_t(plan.size()), factory, seed);
  EXPECT_FALSE(front->has_head());
  EXPECT_TRUE(back->has_head());
  // Same names, same initial values, whichever stage holds a layer.
  std::map<std::string, torch::Tensor> parts;
  for (auto* stage : {&front, &back})
    for (const auto& info : (*stage)->param_infos()) parts[info.name] = info.tensor;
  const auto infos = whole->param_infos();
  ASSERT_EQ(infos.size(), parts.size());
  for (const auto& info : infos) {
    ASSERT_TRUE(parts.count(info.name)) << info.name;
    EXPECT_TRUE(torch::equal(parts[info.name], info.tensor)) << info.name << " seed " << seed;
  }
  torch::manual_seed(seed + 1);
  const auto images = torch::randn({4, options.channels, options.image_size, options.image_size});
  const auto expected = whole->forward(images);
  const auto split = back->forward(front->forward(images));
  EXPECT_TRUE(torch::equal(expected, split)) << "seed " << seed;
}

// training.recompute: full on the CNN: a stage whose bottlenecks rerun in
// backward gives the same loss, every parameter gradient and every BatchNorm
// running statistic bit for bit (the rerun must not count the batch twice),
// and keeps fewer bytes between forward and backward.
TEST(CnnStage, RecomputedBlocksGiveTheSameGradientsAndStatistics) {
  // Installed before any tensor of the test exists (they report to it when freed).
  cmpi::testing::CountedAllocations counted;
  const uint64_t seed = cmpi::testing::test_seed();
  const auto options = small_resnet(seed);
  const auto plan = resnet_layers(options);
  LocalConvLayerFactory factory;
  CnnStage stored(plan, 0, int64_t(plan.size()), factory, seed);
  CnnStage recomputed(plan, 0, int64_t(plan.size()), factory, seed, int64_t(plan.size()));
  EXPECT_EQ(stored->recomputed_blocks(), 0);
  EXPECT_EQ(recomputed->recomputed_blocks(), int64_t(plan.size()) - 2) << "every bottleneck";
  torch::manual_seed(seed + 1);
  const auto images = torch::randn({4, options.channels, options.image_size, options.image_size});
  const auto labels = torch::randint(options.classes, {4}, torch::kLong);
  std::map<std::string, int64_t> kept_after_forward;
  std::map<std::string, torch::Tensor> losses;
  for (auto* stage : {&stored, &recomputed}) {
    const std::string name = stage == &stored ? "stored" : "recomputed";
    const int64_t before = counted.live();
    auto loss = torch::nn::functional::cross_entropy((*stage)->forward(images), labels);
    kept_after_forward[name] = counted.live() - before;
    loss.backward();
    losses[name] = loss.detach();
  }
  EXPECT_TRUE(torch::equal(losses["stored"], losses["recomputed"])) << "seed " << seed;
  const auto a = stored->named_parameters(), b = recomputed->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(torch::equal(a[i].value().grad(), b[i].value().grad()))
        << a[i].key() << " seed " << seed;
  const auto sa = stored->named_buffers(), sb = recomputed->named_buffers();
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i)
    EXPECT_TRUE(torch::equal(sa[i].value(), sb[i].value())) << sa[i].key() << " seed " << seed;
  std::printf("kept between forward and backward: stored %lld bytes, recomputed %lld bytes\n",
              (long long)kept_after_forward["stored"], (long long)kept_after_forward["recomputed"]);
  EXPECT_LT(kept_after_forward["recomputed"], kept_after_forward["stored"] * 3 / 4)
      << "stored " << kept_after_forward["stored"] << " bytes, recomputed "
      << kept_after_forward["recomputed"];
}

// The activation option reaches every layer: a head alone computes
// classifier(pool(act(bn(x)))) with the chosen act.
TEST(CnnStage, TheHeadAppliesTheChosenActivation) {
  const uint64_t seed = cmpi::testing::test_seed();
  LocalConvLayerFactory factory;
  torch::manual_seed(seed);
  for (const Activation activation : {Activation::kRelu, Activation::kSilu}) {
    auto options = small_resnet(seed);
    options.activation = activation;
    const auto plan = resnet_layers(options);
    for (const auto& layer : plan) EXPECT_EQ(layer.activation, activation);
    const int64_t last = int64_t(plan.size()) - 1;
    CnnStage head(plan, last, last + 1, factory, seed);
    const auto& spec = plan.back();
    const auto x = torch::randn({3, spec.in_channels, spec.in_size, spec.in_size});
    torch::Tensor weight, bias;
    for (const auto& info : head->param_infos()) {
      if (info.name.find("classifier.weight") != std::string::npos) weight = info.tensor;
      if (info.name.find("classifier.bias") != std::string::npos) bias = info.tensor;
    }
    ASSERT_TRUE(weight.defined() && bias.defined());
    // A fresh BatchNorm in training mode: (x - mean) / sqrt(var + 1e-5).
    const auto mean = x.mean({0, 2, 3}, true);
    const auto var = x.var({0, 2, 3}, false, true);
    const auto normed = (x - mean) / torch::sqrt(var + 1e-5);
    const auto act = activation == Activation::kSilu ? normed * torch::sigmoid(normed)
                                                     : torch::clamp_min(normed, 0);
    const auto expected = torch::linear(act.mean({2, 3}), weight, bias);
    EXPECT_TRUE(torch::allclose(head->forward(x), expected, 1e-5, 1e-5))
        << (activation == Activation::kSilu ? "silu" : "relu") << " seed " << seed;
  }
  EXPECT_EQ(parse_activation("silu"), Activation::kSilu);
  EXPECT_THROW(parse_activation("tanh"), std::invalid_argument);
}

TEST(CnnStage, EmptyOrOutOfRangeLayersAreRefused) {
  const auto plan = resnet_layers(small_resnet(1));
  LocalConvLayerFactory factory;
  EXPECT_THROW(CnnStage(plan, 2, 2, factory, 1), std::invalid_argument);
  EXPECT_THROW(CnnStage(plan, 0, 9, factory, 1), std::invalid_argument);
}

}  // namespace
}  // namespace cmpi::models
