// LayerPlan: a WindowPlan now or at the first forward (see layer_plan.h).
// Inference gathers every rank's (rows, cols) so that all ranks see the same
// numbers and so take the same decision, error included.
#include "parallel/spatial/layer_plan.h"

#include <stdexcept>
#include <vector>

namespace cmpi::parallel::spatial {

LayerPlan::LayerPlan(const TileGrid& input, const Window& window, const std::string& layer)
    : window_(window),
      layer_(layer),
      slicing_(input.slicing()),
      plan_(std::make_unique<WindowPlan>(input, window, layer)) {}

LayerPlan::LayerPlan(Slicing slicing, const Window& window, const std::string& layer)
    : window_(window), layer_(layer), slicing_(slicing) {}

const WindowPlan& LayerPlan::for_tile(const torch::Tensor& tile, comm::Communicator& sp) {
  if (!plan_)
    plan_ = std::make_unique<WindowPlan>(
        infer_tile_grid(tile, slicing_, sp, "input of layer " + layer_), window_, layer_);
  return *plan_;
}

const WindowPlan& LayerPlan::plan() const {
  if (!plan_)
    throw std::logic_error("layer " + layer_ +
                           ": its tile grid is known only after its first forward");
  return *plan_;
}

TileGrid infer_tile_grid(const torch::Tensor& tile, Slicing slicing, comm::Communicator& sp,
                         const std::string& where) {
  if (tile.dim() != 4)
    throw std::invalid_argument(where + ": sp rank " + std::to_string(sp.rank()) +
                                " expects a tile [N, C, H, W], got " + std::to_string(tile.dim()) +
                                " dims");
  const GridShape shape = grid_shape(slicing, sp.size());
  const float mine[2] = {float(tile.size(2)), float(tile.size(3))};
  std::vector<float> all(size_t(2 * sp.size()));
  sp.allgather(mine, all.data(), std::vector<size_t>(size_t(sp.size()), 2), comm::Role::kOther);
  auto rows_of = [&](int rank) { return int64_t(all[size_t(2 * rank)]); };
  auto cols_of = [&](int rank) { return int64_t(all[size_t(2 * rank + 1)]); };
  int64_t height = 0, width = 0;
  for (int r = 0; r < shape.rows; ++r) height += rows_of(r * shape.cols);
  for (int c = 0; c < shape.cols; ++c) width += cols_of(c);
  TileGrid grid(height, width, sp.size(), slicing, where);
  for (int rank = 0; rank < sp.size(); ++rank) {
    const int64_t want_rows = grid.row_span(grid.row_of(rank)).size;
    const int64_t want_cols = grid.col_span(grid.col_of(rank)).size;
    if (rows_of(rank) != want_rows || cols_of(rank) != want_cols)
      throw GeometryError(where + ": sp rank " + std::to_string(rank) + " holds a " +
                          std::to_string(rows_of(rank)) + " x " + std::to_string(cols_of(rank)) +
                          " tile, but the balanced " + to_string(slicing) + " split of the " +
                          std::to_string(height) + " x " + std::to_string(width) +
                          " image gives it " + std::to_string(want_rows) + " x " +
                          std::to_string(want_cols));
  }
  return grid;
}

}  // namespace cmpi::parallel::spatial
