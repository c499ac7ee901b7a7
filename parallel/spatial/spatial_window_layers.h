// Spatial (tiled) Conv2d, MaxPool2d and AvgPool2d over the sp group. Each
// takes this rank's tile [N, C, h, w] of the input image and returns its
// tile of the output image, equal to the same slice of the single-rank
// layer's output (float rounding aside). Each layer owns the plan of its
// window over its input grid (LayerPlan): built from the input grid given to
// the constructor, or, with a Slicing instead, at the first forward from the
// tiles (one small allgather; for layer factories that do not know image
// sizes). output_grid() is the next layer's input grid (after the first
// forward for the latter).
//
// Conv2d: weight [out, in, k, k] and bias are replicated on every sp rank;
// after backward .grad holds this tile's contribution only. Sum it over sp
// with allreduce_spatial_gradients (sp_reductions.h) before the dp
// reduction. Initialised as torch::nn::Conv2d is (Kaiming uniform, a = √5);
// give every rank the same generator state, or broadcast, so replicas agree.
//
// MaxPool2d pads the true image border with -inf (as PyTorch does), AvgPool2d
// with zeros and divides by k*k (PyTorch's count_include_pad = true), no
// dilation. Both in floor mode.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "comm/communicator.h"
#include "parallel/spatial/layer_plan.h"
#include "parallel/spatial/tile_geometry.h"

namespace cmpi::parallel::spatial {

class SpatialConv2dImpl : public torch::nn::Module {
 public:
  // `input`: the grid of this layer's input image; `name` appears in errors.
  SpatialConv2dImpl(int64_t in_channels, int64_t out_channels, const Window& window, bool bias,
                    const TileGrid& input, comm::Communicator& sp, const std::string& name,
                    uint64_t buffer_key = 0);
  // Grid inferred from the tiles at the first forward.
  SpatialConv2dImpl(int64_t in_channels, int64_t out_channels, const Window& window, bool bias,
                    Slicing slicing, comm::Communicator& sp, const std::string& name,
                    uint64_t buffer_key = 0);
  torch::Tensor forward(const torch::Tensor& tile);
  const TileGrid& output_grid() const { return plan_.plan().output(); }
  const WindowPlan& plan() const { return plan_.plan(); }

  torch::Tensor weight, bias;  // bias undefined without one

 private:
  void init_parameters(int64_t in_channels, int64_t out_channels, bool bias);
  LayerPlan plan_;
  comm::Communicator& sp_;
  uint64_t buffer_key_;
};
TORCH_MODULE(SpatialConv2d);

// Max and average pooling differ only in the value the halo pads with (-inf
// or 0) and the LibTorch op; one class template serves both.
enum class PoolKind { kMax, kAverage };

template <PoolKind kKind>
class SpatialPool2dImpl : public torch::nn::Module {
 public:
  // Average pooling: window.dilation must be 1 (GeometryError naming the
  // layer otherwise).
  SpatialPool2dImpl(const Window& window, const TileGrid& input, comm::Communicator& sp,
                    const std::string& name, uint64_t buffer_key = 0);
  SpatialPool2dImpl(const Window& window, Slicing slicing, comm::Communicator& sp,
                    const std::string& name, uint64_t buffer_key = 0);
  torch::Tensor forward(const torch::Tensor& tile);
  const TileGrid& output_grid() const { return plan_.plan().output(); }

 private:
  LayerPlan plan_;
  comm::Communicator& sp_;
  uint64_t buffer_key_;
};

using SpatialMaxPool2dImpl = SpatialPool2dImpl<PoolKind::kMax>;
using SpatialAvgPool2dImpl = SpatialPool2dImpl<PoolKind::kAverage>;
TORCH_MODULE(SpatialMaxPool2d);
TORCH_MODULE(SpatialAvgPool2d);

}  // namespace cmpi::parallel::spatial
