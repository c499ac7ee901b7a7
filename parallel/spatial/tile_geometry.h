// Tile geometry of spatial parallelism (torch-free): how an H x W image is
// cut over the P ranks of the sp group, and, for a convolution or pooling
// window (kernel k, stride s, padding p, dilation d), which output pixels each
// rank owns and which input pixels (halo) it needs from its neighbours.
//
// Terms: the ranks form a grid of `rows` x `cols` tiles, rank = row * cols +
// col (row-major, the order of the sp group). Slicing `square` is a sqrt(P) x
// sqrt(P) grid, `vertical` P column slabs (1 x P), `horizontal` P row slabs
// (P x 1). Each axis is cut by a balanced split: n pixels over t tiles give
// the first n % t tiles one pixel more, so sizes differ by at most one. The
// geometry is separable: what a tile needs along rows depends only on its
// tile row, along columns only on its tile column (AxisWindow), and the 2-D
// halo from a diagonal neighbour is the product of the two.
//
// A window layer's output is cut by the same balanced split (so its tiles
// are the next layer's input tiles). Output rows [o0, o1) read input rows
// [o0*s - p, (o1-1)*s - p + d*(k-1)]; what of that lies outside the image is
// the layer's padding, what lies in a neighbour's tile is the halo, what of
// the own tile is not read is cropped.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace cmpi::parallel::spatial {

// A layout or layer the geometry cannot serve; the message names the layer
// and the config key where they are known.
class GeometryError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

enum class Slicing { kSquare, kVertical, kHorizontal };

const char* to_string(Slicing slicing);
// "square" | "vertical" | "horizontal"; otherwise GeometryError naming `key`.
Slicing parse_slicing(const std::string& name, const std::string& key = "parallel.spatial_slicing");

// A range [start, start + size) of pixels along one axis.
struct Span {
  int64_t start = 0;
  int64_t size = 0;
  int64_t end() const { return start + size; }
  bool operator==(const Span& o) const { return start == o.start && size == o.size; }
};

// Part `index` of `n` pixels cut into `parts` balanced parts.
Span balanced_part(int64_t n, int parts, int index);

// Square kernel window of a conv or pool layer (the same on both axes).
struct Window {
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t dilation = 1;
  // Output length of an input of `n` pixels (PyTorch's formula, floor mode).
  int64_t output_length(int64_t n) const;
  std::string describe() const;  // "kernel 3, stride 2, padding 1, dilation 1"
};

// What one tile row (or column) reads along its axis, in pixels, in order:
// pad_before zeros (outside the image), halo_before pixels of the previous
// tile, the own tile without crop_before / crop_after unread pixels,
// halo_after pixels of the next tile, pad_after zeros.
struct AxisWindow {
  Span tile;  // input pixels this tile holds
  Span out;   // output pixels it owns
  int64_t pad_before = 0, halo_before = 0, crop_before = 0;
  int64_t crop_after = 0, halo_after = 0, pad_after = 0;
  // Length of the local input the window runs over (pads and halos included).
  int64_t local_length() const {
    return pad_before + halo_before + tile.size - crop_before - crop_after + halo_after + pad_after;
  }
};

// Tile rows x cols of `ranks` ranks under `slicing`; GeometryError for a
// non-square count under `square` or fewer than one rank.
struct GridShape {
  int rows = 1, cols = 1;
};
GridShape grid_shape(Slicing slicing, int ranks);

// Grid of ranks over an image of height x width pixels.
class TileGrid {
 public:
  // Throws GeometryError for a non-square count under `square`, fewer than
  // one rank, or an image with fewer pixels along an axis than tiles.
  // `where` names the tensor for messages ("input of layer conv1").
  TileGrid(int64_t height, int64_t width, int ranks, Slicing slicing,
           const std::string& where = "image");

  int64_t height() const { return height_; }
  int64_t width() const { return width_; }
  int ranks() const { return rows_ * cols_; }
  int rows() const { return rows_; }
  int cols() const { return cols_; }
  Slicing slicing() const { return slicing_; }
  int row_of(int rank) const { return rank / cols_; }
  int col_of(int rank) const { return rank % cols_; }
  // The rank at tile (row, col), or -1 outside the grid.
  int rank_at(int row, int col) const;
  Span row_span(int row) const { return balanced_part(height_, rows_, row); }
  Span col_span(int col) const { return balanced_part(width_, cols_, col); }
  // Element count of a rank's tile for one image channel.
  int64_t tile_pixels(int rank) const {
    return row_span(row_of(rank)).size * col_span(col_of(rank)).size;
  }
  // Ranks of the up to 8 neighbours (dy, dx in -1..1, not both 0).
  struct Neighbour {
    int dy, dx, rank;
  };
  std::vector<Neighbour> neighbours(int rank) const;

 private:
  int64_t height_, width_;
  int rows_, cols_;
  Slicing slicing_;
};

// A window layer over a tile grid: its output grid and what each tile row
// and column reads.
class WindowPlan {
 public:
  // Throws GeometryError naming `layer` when the window does not fit the
  // image, the output has fewer pixels along an axis than tiles, or a tile
  // needs more halo than its neighbour's tile holds (tile smaller than the
  // halo), or reads none of its own pixels.
  WindowPlan(const TileGrid& input, const Window& window, const std::string& layer);

  const TileGrid& input() const { return input_; }
  const TileGrid& output() const { return output_; }
  const Window& window() const { return window_; }
  const std::string& layer() const { return layer_; }
  const AxisWindow& row_window(int row) const { return row_windows_[size_t(row)]; }
  const AxisWindow& col_window(int col) const { return col_windows_[size_t(col)]; }
  // Halo (rows, cols) that `rank` receives from its neighbour (dy, dx);
  // {0, 0} where there is none.
  struct Extent {
    int64_t rows = 0, cols = 0;
  };
  Extent halo_from(int rank, int dy, int dx) const;

 private:
  // In this order: the output grid is built after the windows are checked.
  TileGrid input_;
  Window window_;
  std::string layer_;
  std::vector<AxisWindow> row_windows_, col_windows_;
  TileGrid output_;
};

// The windows of every tile along one axis of `n` pixels cut into `tiles`
// (exposed for tests). `axis` is "rows" or "columns", for messages.
std::vector<AxisWindow> axis_windows(int64_t n, int tiles, const Window& window,
                                     const std::string& layer, const char* axis);

}  // namespace cmpi::parallel::spatial
