// Tile geometry (one process, torch-free): balanced splits, every window's
// read range against a brute-force walk over its kernel taps, neighbours
// (corners included), halos from diagonal neighbours, and the named errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "parallel/spatial/tile_geometry.h"

namespace cmpi::parallel::spatial {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(SpatialGeometry, BalancedPartsCoverTheAxisAndDifferByAtMostOne) {
  for (int64_t n : {1, 7, 8, 55, 1000})
    for (int parts = 1; parts <= std::min<int64_t>(n, 9); ++parts) {
      int64_t next = 0, smallest = n, largest = 0;
      for (int i = 0; i < parts; ++i) {
        const Span s = balanced_part(n, parts, i);
        EXPECT_EQ(s.start, next) << n << " over " << parts << ", part " << i;
        next = s.end();
        smallest = std::min(smallest, s.size);
        largest = std::max(largest, s.size);
      }
      EXPECT_EQ(next, n);
      EXPECT_LE(largest - smallest, 1);
    }
}

// The windows against a walk over every output pixel's kernel taps.
TEST(SpatialGeometry, AxisWindowsReadWhatTheKernelTapsTouch) {
  int checked = 0;
  for (int64_t n : {23, 40, 55})
    for (int tiles : {1, 2, 3, 4})
      for (int64_t k : {1, 3, 5, 7})
        for (int64_t s : {1, 2})
          for (int64_t p : {int64_t(0), k / 2})
            for (int64_t d : {1, 2}) {
              const Window w{k, s, p, d};
              std::vector<AxisWindow> windows;
              try {
                windows = axis_windows(n, tiles, w, "probe", "rows");
              } catch (const GeometryError&) {
                continue;  // too small a tile for this window: checked below
              }
              int64_t out_next = 0;
              for (int t = 0; t < tiles; ++t) {
                const AxisWindow& a = windows[size_t(t)];
                SCOPED_TRACE(std::to_string(n) + " px, tile " + std::to_string(t) + "/" +
                             std::to_string(tiles) + ", " + w.describe());
                EXPECT_EQ(a.tile, balanced_part(n, tiles, t));
                EXPECT_EQ(a.out.start, out_next);
                out_next = a.out.end();
                int64_t lo = INT64_MAX, hi = INT64_MIN;
                for (int64_t o = a.out.start; o < a.out.end(); ++o)
                  for (int64_t tap = 0; tap < k; ++tap) {
                    lo = std::min(lo, o * s - p + tap * d);
                    hi = std::max(hi, o * s - p + tap * d);
                  }
                EXPECT_EQ(a.pad_before, std::max<int64_t>(0, -lo));
                EXPECT_EQ(a.pad_after, std::max<int64_t>(0, hi - (n - 1)));
                const int64_t first = std::max<int64_t>(lo, 0), last = std::min(hi, n - 1);
                EXPECT_EQ(a.tile.start - a.halo_before + a.crop_before, first);
                EXPECT_EQ(a.tile.end() - 1 + a.halo_after - a.crop_after, last);
                EXPECT_TRUE(a.halo_before == 0 || a.crop_before == 0);
                EXPECT_TRUE(a.halo_after == 0 || a.crop_after == 0);
                EXPECT_EQ(a.local_length(), hi - lo + 1);
                // A window over the local input yields exactly the owned outputs.
                const Window unpadded{k, s, 0, d};
                EXPECT_EQ(unpadded.output_length(a.local_length()), a.out.size);
                ++checked;
              }
              EXPECT_EQ(out_next, w.output_length(n));
            }
  EXPECT_GT(checked, 500);
}

TEST(SpatialGeometry, GridShapesAndNeighboursWithCorners) {
  const TileGrid square(30, 31, 9, Slicing::kSquare);
  EXPECT_EQ(square.rows(), 3);
  EXPECT_EQ(square.cols(), 3);
  EXPECT_EQ(square.neighbours(4).size(), 8u);  // centre
  EXPECT_EQ(square.neighbours(0).size(), 3u);  // corner: right, below, diagonal
  EXPECT_EQ(square.neighbours(1).size(), 5u);  // edge
  const TileGrid vertical(30, 31, 4, Slicing::kVertical);
  EXPECT_EQ(vertical.rows(), 1);
  EXPECT_EQ(vertical.cols(), 4);
  EXPECT_EQ(vertical.col_span(3).size, 7);
  EXPECT_EQ(vertical.neighbours(0).size(), 1u);
  EXPECT_EQ(vertical.neighbours(2).size(), 2u);
  const TileGrid horizontal(30, 31, 4, Slicing::kHorizontal);
  EXPECT_EQ(horizontal.rows(), 4);
  EXPECT_EQ(horizontal.row_span(1), (Span{8, 8}));
  EXPECT_EQ(horizontal.row_span(3), (Span{23, 7}));
}

TEST(SpatialGeometry, DiagonalHaloIsTheProductOfTheAxisHalos) {
  const TileGrid grid(41, 37, 4, Slicing::kSquare);
  const WindowPlan plan(grid, Window{5, 1, 2, 1}, "conv");
  // Rank 3 is the bottom-right tile: 2 halo rows from above, 2 halo columns from the left.
  EXPECT_EQ(plan.halo_from(3, -1, -1).rows, 2);
  EXPECT_EQ(plan.halo_from(3, -1, -1).cols, 2);
  EXPECT_EQ(plan.halo_from(3, -1, 0).rows, 2);
  EXPECT_EQ(plan.halo_from(3, -1, 0).cols, grid.col_span(1).size);
  EXPECT_EQ(plan.halo_from(3, 1, 0).rows, 0);  // no tile below
  EXPECT_EQ(plan.output().height(), 41);
  EXPECT_EQ(plan.output().width(), 37);
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const GeometryError& e) {
    return e.what();
  }
  return "";
}

TEST(SpatialGeometry, NamedErrors) {
  std::string e = error_of([] { TileGrid(64, 64, 6, Slicing::kSquare); });
  EXPECT_TRUE(contains(e, "parallel.spatial_slicing") && contains(e, "square number")) << e;
  e = error_of([] { TileGrid(3, 64, 4, Slicing::kHorizontal, "input of conv1"); });
  EXPECT_TRUE(contains(e, "input of conv1") && contains(e, "4 x 1 tiles")) << e;
  e = error_of([] {
    WindowPlan(TileGrid(8, 64, 4, Slicing::kHorizontal), Window{7, 1, 3, 1}, "conv7");
  });
  EXPECT_TRUE(contains(e, "layer conv7") && contains(e, "tile smaller than the halo") &&
              contains(e, "rows"))
      << e;
  e = error_of([] {
    WindowPlan(TileGrid(16, 16, 4, Slicing::kVertical), Window{9, 1, 0, 2}, "wide");
  });
  EXPECT_TRUE(contains(e, "layer wide") && contains(e, "does not fit")) << e;
  e = error_of([] {
    WindowPlan(TileGrid(16, 7, 4, Slicing::kVertical), Window{3, 2, 0, 1}, "down");
  });
  EXPECT_TRUE(contains(e, "layer down") && contains(e, "cannot be cut into 4 tiles")) << e;
  e = error_of([] { parse_slicing("diagonal"); });
  EXPECT_TRUE(contains(e, "parallel.spatial_slicing") && contains(e, "diagonal")) << e;
  EXPECT_EQ(parse_slicing("square"), Slicing::kSquare);
}

}  // namespace
}  // namespace cmpi::parallel::spatial
