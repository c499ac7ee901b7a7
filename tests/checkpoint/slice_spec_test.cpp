// Slices of a global tensor: scattering every tp slice's flat runs (cut at
// arbitrary points, as ZeRO shards are) rebuilds the global tensor exactly,
// and gathering a slice back matches an index-by-index reference.
#include "checkpoint/slice_spec.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "tests/support/test_seed.h"

namespace cmpi::checkpoint {
namespace {

// Element (i0, i1, i2) of a [d0, d1, d2] row-major tensor.
size_t at(const std::vector<int64_t>& s, int64_t i0, int64_t i1, int64_t i2) {
  return size_t((i0 * s[1] + i1) * s[2] + i2);
}

TEST(SliceSpec, ScatterAndGatherAlongEveryDim) {
  const uint64_t seed = testing::test_seed();
  std::mt19937 random{static_cast<uint32_t>(seed)};
  const std::vector<int64_t> shape{4, 6, 8};
  std::vector<float> global(size_t(4 * 6 * 8));
  std::iota(global.begin(), global.end(), 0.0f);
  for (int dim = -1; dim < 3; ++dim) {
    const int count = dim < 0 ? 1 : 2;
    std::vector<float> rebuilt(global.size(), -1.0f);
    for (int index = 0; index < count; ++index) {
      const SliceSpec spec{shape, dim, index, count};
      spec.validate("test");
      std::vector<float> slice(size_t(spec.numel()));
      gather_from_global(spec, global.data(), slice.data());
      // Reference: walk the slice's own index space.
      std::vector<int64_t> s = shape;
      if (dim >= 0) s[size_t(dim)] /= count;
      size_t k = 0;
      for (int64_t i0 = 0; i0 < s[0]; ++i0)
        for (int64_t i1 = 0; i1 < s[1]; ++i1)
          for (int64_t i2 = 0; i2 < s[2]; ++i2, ++k) {
            int64_t g[3] = {i0, i1, i2};
            if (dim >= 0) g[dim] += index * s[size_t(dim)];
            ASSERT_EQ(slice[k], global[at(shape, g[0], g[1], g[2])])
                << "dim " << dim << " slice " << index << " element " << k << " seed " << seed;
          }
      // Scatter it back in random runs.
      size_t offset = 0;
      while (offset < slice.size()) {
        const size_t n = std::min(slice.size() - offset, size_t(1 + random() % 17));
        scatter_into_global(spec, offset, n, slice.data() + offset, rebuilt.data());
        offset += n;
      }
    }
    EXPECT_EQ(rebuilt, global) << "dim " << dim << " seed " << seed;
  }
}

TEST(SliceSpec, ValidateNamesWhatIsWrong) {
  EXPECT_THROW((SliceSpec{{6, 4}, 0, 0, 4}.validate("p")), std::invalid_argument);
  EXPECT_THROW((SliceSpec{{6, 4}, 2, 0, 2}.validate("p")), std::invalid_argument);
  EXPECT_THROW((SliceSpec{{6, 4}, 0, 2, 2}.validate("p")), std::invalid_argument);
  EXPECT_THROW((SliceSpec{{6, 4}, -1, 0, 2}.validate("p")), std::invalid_argument);
  EXPECT_NO_THROW((SliceSpec{{6, 4}, 1, 1, 2}.validate("p")));
}

}  // namespace
}  // namespace cmpi::checkpoint
