// SpatialConvLayerFactory: the layers of a CNN stage that runs on tiles of
// the images, one per rank of the sp group (parallel/spatial/). Convolutions
// and pools exchange halos with the neighbouring tiles; BatchNorm reduces its
// statistics over sp; the global pool sums over the tiles, so the classifier
// after it is replicated over sp. The layers are built with only the slicing
// and plan their windows from the tiles at their first forward (the factory
// does not know image sizes), so the stage's first forward is collective
// over sp, as every later one is.
//
// Each layer gets its own buffer key (error-feedback state of a lossy halo
// codec) and a name for its errors ("spatial conv 4 (kernel 3, ...)").
// Parameters are replicated over sp: the caller sums their gradients over sp
// (allreduce_spatial_gradients), the classifier's excepted.
#pragma once

#include <cstdint>

#include "comm/communicator.h"
#include "models/cnn/conv_layer_factory.h"
#include "parallel/spatial/tile_geometry.h"

namespace cmpi::models {

class SpatialConvLayerFactory final : public ConvLayerFactory {
 public:
  SpatialConvLayerFactory(comm::Communicator& sp, parallel::spatial::Slicing slicing);
  torch::nn::AnyModule conv2d(const Conv2dSpec& spec) const override;
  torch::nn::AnyModule batch_norm(int64_t channels) const override;
  torch::nn::AnyModule max_pool(int64_t kernel, int64_t stride, int64_t padding) const override;
  torch::nn::AnyModule avg_pool(int64_t kernel, int64_t stride, int64_t padding) const override;
  torch::nn::AnyModule global_avg_pool() const override;

 private:
  // The next layer's buffer key and name; the model asks for layers in
  // the same order on every sp rank, so the keys agree.
  uint64_t next_key() const { return next_key_++; }
  std::string name(const char* kind) const;

  comm::Communicator& sp_;
  parallel::spatial::Slicing slicing_;
  mutable uint64_t next_key_ = 1;
};

}  // namespace cmpi::models
