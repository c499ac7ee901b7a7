// Synthetic images: deterministic per (seed, split, index), labels spread
// over every class, the added noise has the stated standard deviation, the
// signal alone is the bounded grating, and bad options are refused by name.
#include "data/synthetic_images.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/test_seed.h"

namespace cmpi::data {
namespace {

SyntheticImageOptions options_with_seed(uint64_t seed) {
  SyntheticImageOptions o;
  o.seed = seed;
  o.image_size = 16;
  o.channels = 3;
  o.classes = 10;
  o.noise = 0.5;
  return o;
}

std::vector<float> image_of(const SyntheticImages& images, ImageSplit split, int64_t index) {
  std::vector<float> pixels(size_t(images.pixels_per_image()));
  images.fill(split, index, pixels.data());
  return pixels;
}

TEST(SyntheticImages, SameIndexSameImageAndSplitsDiffer) {
  const uint64_t seed = cmpi::testing::test_seed();
  const SyntheticImages a(options_with_seed(seed)), b(options_with_seed(seed));
  for (int64_t i : {0, 1, 17, 100000}) {
    EXPECT_EQ(image_of(a, ImageSplit::kTrain, i), image_of(b, ImageSplit::kTrain, i))
        << "seed " << seed << " index " << i;
    EXPECT_EQ(a.label(ImageSplit::kTrain, i), b.label(ImageSplit::kTrain, i));
    EXPECT_NE(image_of(a, ImageSplit::kTrain, i), image_of(a, ImageSplit::kValid, i));
  }
  EXPECT_NE(image_of(a, ImageSplit::kTrain, 3), image_of(a, ImageSplit::kTrain, 4));
}

TEST(SyntheticImages, LabelsCoverEveryClassEvenly) {
  const uint64_t seed = cmpi::testing::test_seed();
  const SyntheticImages images(options_with_seed(seed));
  std::vector<int> counts(10, 0);
  const int n = 5000;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t label = images.label(ImageSplit::kTrain, i);
    ASSERT_GE(label, 0);
    ASSERT_LT(label, 10);
    ++counts[size_t(label)];
  }
  // Expected 500 each; binomial standard deviation ~21, so +-100 is ~5 sigma.
  for (int c = 0; c < 10; ++c)
    EXPECT_NEAR(counts[size_t(c)], n / 10, 100) << "seed " << seed << " class " << c;
}

TEST(SyntheticImages, NoiseHasTheStatedDeviationAndTheSignalIsBounded) {
  const uint64_t seed = cmpi::testing::test_seed();
  auto clean_options = options_with_seed(seed);
  clean_options.noise = 0;
  const SyntheticImages clean(clean_options), noisy(options_with_seed(seed));
  double sum_sq = 0;
  size_t count = 0;
  for (int64_t i = 0; i < 20; ++i) {
    const auto signal = image_of(clean, ImageSplit::kTrain, i);
    const auto with_noise = image_of(noisy, ImageSplit::kTrain, i);
    for (size_t p = 0; p < signal.size(); ++p) {
      ASSERT_LE(std::abs(signal[p]), 1.0f) << "seed " << seed;
      const double d = double(with_noise[p]) - double(signal[p]);
      sum_sq += d * d;
      ++count;
    }
  }
  // 15360 draws: the sample deviation is within ~1% of 0.5; allow 5%.
  EXPECT_NEAR(std::sqrt(sum_sq / double(count)), 0.5, 0.025) << "seed " << seed;
}

TEST(SyntheticImages, BadOptionsAreRefusedByName) {
  const auto message = [](SyntheticImageOptions o) -> std::string {
    try {
      SyntheticImages images(o);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  SyntheticImageOptions o;
  o.classes = 1;
  EXPECT_NE(message(o).find("classes"), std::string::npos);
  o = {};
  o.image_size = 0;
  EXPECT_NE(message(o).find("image_size"), std::string::npos);
  o = {};
  o.channels = 0;
  EXPECT_NE(message(o).find("channels"), std::string::npos);
  o = {};
  o.noise = -1;
  EXPECT_NE(message(o).find("noise"), std::string::npos);
}

}  // namespace
}  // namespace cmpi::data
