// How a spatial window layer gets its WindowPlan: from the input grid given
// at construction (the model knows its image sizes), or, for layers built
// without it (a layer factory that only knows kernel, stride and padding),
// inferred at the first forward from the tiles themselves: every rank's tile
// size is allgathered over sp (one 2-float message per rank, role `other`),
// the image size is their sum along the grid's first row and column, and
// every tile must be that image's balanced split. The plan is then kept: the
// graphs built over it hold its address, and later tiles must have the same
// shape (the halo exchange checks it, naming the layer and the rank).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>

#include "comm/communicator.h"
#include "parallel/spatial/tile_geometry.h"

namespace cmpi::parallel::spatial {

class LayerPlan {
 public:
  // Planned now (GeometryError naming `layer` if the window does not fit).
  LayerPlan(const TileGrid& input, const Window& window, const std::string& layer);
  // Planned at the first for_tile.
  LayerPlan(Slicing slicing, const Window& window, const std::string& layer);

  // The plan, inferred from this tile on the first call of a lazy layer
  // (collective over sp: every rank must call it then).
  const WindowPlan& for_tile(const torch::Tensor& tile, comm::Communicator& sp);
  bool planned() const { return plan_ != nullptr; }
  // std::logic_error naming the layer before a lazy layer's first forward.
  const WindowPlan& plan() const;
  const Window& window() const { return window_; }
  const std::string& layer() const { return layer_; }

 private:
  Window window_;
  std::string layer_;
  Slicing slicing_;
  std::unique_ptr<WindowPlan> plan_;
};

// The grid of the image whose tiles the sp ranks hold (collective over sp).
// GeometryError naming `where` and the first rank whose tile does not fit.
TileGrid infer_tile_grid(const torch::Tensor& tile, Slicing slicing, comm::Communicator& sp,
                         const std::string& where);

}  // namespace cmpi::parallel::spatial
