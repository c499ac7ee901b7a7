// Tile geometry: balanced splits per axis, and per tile row/column the input
// range a window layer reads for the output it owns (see tile_geometry.h).
// Every check runs on every rank with the same arguments, so all ranks of
// the sp group fail alike, before any message is sent.
#include "parallel/spatial/tile_geometry.h"

#include <algorithm>
#include <cmath>

namespace cmpi::parallel::spatial {
namespace {

std::string str(int64_t v) {
  return std::to_string(v);
}

int square_side(int ranks) {
  int side = int(std::lround(std::sqrt(double(ranks))));
  while (side * side > ranks) --side;
  while ((side + 1) * (side + 1) <= ranks) ++side;
  return side * side == ranks ? side : -1;
}

}  // namespace

const char* to_string(Slicing slicing) {
  switch (slicing) {
    case Slicing::kSquare:
      return "square";
    case Slicing::kVertical:
      return "vertical";
    case Slicing::kHorizontal:
      return "horizontal";
  }
  return "?";
}

Slicing parse_slicing(const std::string& name, const std::string& key) {
  if (name == "square") return Slicing::kSquare;
  if (name == "vertical") return Slicing::kVertical;
  if (name == "horizontal") return Slicing::kHorizontal;
  throw GeometryError(key + ": unknown slicing '" + name +
                      "' (known: square, vertical, horizontal)");
}

Span balanced_part(int64_t n, int parts, int index) {
  const int64_t base = n / parts, extra = n % parts;
  const int64_t start = index * base + std::min<int64_t>(index, extra);
  return Span{start, base + (index < extra ? 1 : 0)};
}

int64_t Window::output_length(int64_t n) const {
  const int64_t reach = dilation * (kernel - 1) + 1;
  const int64_t span = n + 2 * padding - reach;
  return span < 0 ? 0 : span / stride + 1;
}

std::string Window::describe() const {
  return "kernel " + str(kernel) + ", stride " + str(stride) + ", padding " + str(padding) +
         ", dilation " + str(dilation);
}

GridShape grid_shape(Slicing slicing, int ranks) {
  if (ranks < 1) throw GeometryError("sp group of " + str(ranks) + " ranks (parallel.spatial)");
  switch (slicing) {
    case Slicing::kSquare: {
      const int side = square_side(ranks);
      if (side < 0)
        throw GeometryError(
            "parallel.spatial_slicing: square slicing needs a square number of "
            "sp ranks (parallel.spatial), got " +
            str(ranks) + "; use vertical or horizontal");
      return {side, side};
    }
    case Slicing::kVertical:
      return {1, ranks};
    case Slicing::kHorizontal:
      return {ranks, 1};
  }
  return {};
}

TileGrid::TileGrid(int64_t height, int64_t width, int ranks, Slicing slicing,
                   const std::string& where)
    : height_(height), width_(width), slicing_(slicing) {
  const GridShape shape = grid_shape(slicing, ranks);
  rows_ = shape.rows;
  cols_ = shape.cols;
  if (height < rows_ || width < cols_)
    throw GeometryError(where + ": " + str(height) + " x " + str(width) +
                        " pixels cannot be cut into " + str(rows_) + " x " + str(cols_) +
                        " tiles (" + to_string(slicing) +
                        " slicing, parallel.spatial_slicing); tile smaller than one pixel");
}

int TileGrid::rank_at(int row, int col) const {
  if (row < 0 || row >= rows_ || col < 0 || col >= cols_) return -1;
  return row * cols_ + col;
}

std::vector<TileGrid::Neighbour> TileGrid::neighbours(int rank) const {
  std::vector<Neighbour> out;
  for (int dy = -1; dy <= 1; ++dy)
    for (int dx = -1; dx <= 1; ++dx) {
      if (dy == 0 && dx == 0) continue;
      const int peer = rank_at(row_of(rank) + dy, col_of(rank) + dx);
      if (peer >= 0) out.push_back({dy, dx, peer});
    }
  return out;
}

std::vector<AxisWindow> axis_windows(int64_t n, int tiles, const Window& w,
                                     const std::string& layer, const char* axis) {
  if (w.kernel < 1 || w.stride < 1 || w.dilation < 1 || w.padding < 0)
    throw GeometryError("layer " + layer + ": invalid window (" + w.describe() + ")");
  const int64_t out_n = w.output_length(n);
  if (out_n < 1)
    throw GeometryError("layer " + layer + ": window (" + w.describe() + ") does not fit the " +
                        str(n) + " input " + axis);
  if (out_n < tiles)
    throw GeometryError("layer " + layer + ": output of " + str(out_n) + " " + axis +
                        " cannot be cut into " + str(tiles) +
                        " tiles along that axis (tile "
                        "smaller than one pixel); use fewer sp ranks (parallel.spatial)");
  std::vector<AxisWindow> windows(static_cast<size_t>(tiles));
  for (int i = 0; i < tiles; ++i) {
    AxisWindow& a = windows[size_t(i)];
    a.tile = balanced_part(n, tiles, i);
    a.out = balanced_part(out_n, tiles, i);
    const int64_t need_lo = a.out.start * w.stride - w.padding;
    const int64_t need_end =
        (a.out.end() - 1) * w.stride - w.padding + w.dilation * (w.kernel - 1) + 1;
    const int64_t lo = std::max<int64_t>(need_lo, 0), hi = std::min(need_end, n);
    a.pad_before = lo - need_lo;
    a.pad_after = need_end - hi;
    a.halo_before = std::max<int64_t>(0, a.tile.start - lo);
    a.crop_before = std::max<int64_t>(0, lo - a.tile.start);
    a.halo_after = std::max<int64_t>(0, hi - a.tile.end());
    a.crop_after = std::max<int64_t>(0, a.tile.end() - hi);
    const std::string where = "layer " + layer + " (" + w.describe() + "): tile " + str(i) +
                              " of " + str(tiles) + " along the " + axis + " (" + str(a.tile.size) +
                              " of " + str(n) + " " + axis + ")";
    const std::string remedy =
        "; use fewer sp ranks (parallel.spatial), another slicing "
        "(parallel.spatial_slicing) or a larger image";
    if (a.crop_before + a.crop_after >= a.tile.size)
      throw GeometryError(where + " reads none of its own " + axis + remedy);
    if (i > 0 && a.halo_before > windows[size_t(i - 1)].tile.size)
      throw GeometryError(where + " needs a halo of " + str(a.halo_before) + " " + axis +
                          " from the previous tile, which holds only " +
                          str(windows[size_t(i - 1)].tile.size) + " (tile smaller than the halo)" +
                          remedy);
    if (i + 1 < tiles && a.halo_after > balanced_part(n, tiles, i + 1).size)
      throw GeometryError(where + " needs a halo of " + str(a.halo_after) + " " + axis +
                          " from the next tile, which holds only " +
                          str(balanced_part(n, tiles, i + 1).size) +
                          " (tile smaller than the halo)" + remedy);
  }
  return windows;
}

WindowPlan::WindowPlan(const TileGrid& input, const Window& window, const std::string& layer)
    : input_(input),
      window_(window),
      layer_(layer),
      row_windows_(axis_windows(input.height(), input.rows(), window, layer, "rows")),
      col_windows_(axis_windows(input.width(), input.cols(), window, layer, "columns")),
      output_(window.output_length(input.height()), window.output_length(input.width()),
              input.ranks(), input.slicing(), "output of layer " + layer) {}

WindowPlan::Extent WindowPlan::halo_from(int rank, int dy, int dx) const {
  const int peer = input_.rank_at(input_.row_of(rank) + dy, input_.col_of(rank) + dx);
  if (peer < 0 || (dy == 0 && dx == 0)) return {};
  auto along = [](const AxisWindow& a, int d) {
    return d < 0   ? a.halo_before
           : d > 0 ? a.halo_after
                   : a.tile.size - a.crop_before - a.crop_after;
  };
  return {along(row_window(input_.row_of(rank)), dy), along(col_window(input_.col_of(rank)), dx)};
}

}  // namespace cmpi::parallel::spatial
