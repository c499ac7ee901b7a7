// Where spatial parallelism ends: the tiles of the sp group are gathered into
// whole images for a layer/pipeline-parallel tail, and the tail's gradient
// goes back as tiles.
//
// gather_tiles (autograd): forward allgathers every rank's tile [N, C, h, w]
// into the whole image [N, C, H, W] on every sp rank (role `activation`);
// backward keeps this rank's tile of the image gradient. The tail after the
// gather is replicated over sp (every rank computes the same thing from the
// same image, as Megatron's gather_from_tp_region assumes), so every rank
// holds the same image gradient and its own tile of it is the scatter, with
// no message. Every rank of the sp group must call it with the same grid.
//
// gather_tiles_to_root (autograd): for a tail that runs on one rank (the
// next pipeline stage is fed by the root): forward sends every tile to
// `root`, which returns the whole image; the other ranks return an empty
// tensor [0] that stays in the graph. Backward: the root sends each rank its
// tile of the image gradient (role `activation_grad`). Every rank must run
// backward through it: the root from its loss, the others from their empty
// output (torch::autograd::backward({out}, {torch::zeros({0})})), since the
// scatter is a collective of the sp group. One alltoall each way, where
// only the root receives (forward) or sends (backward).
//
// tile_of (plain): this rank's tile of a whole image (how spatial input is
// fed, and the scatter without autograd).
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "comm/communicator.h"
#include "parallel/spatial/tile_geometry.h"

namespace cmpi::parallel::spatial {

torch::Tensor gather_tiles(const torch::Tensor& tile, const TileGrid& grid, comm::Communicator& sp,
                           uint64_t buffer_key = 0);

torch::Tensor gather_tiles_to_root(const torch::Tensor& tile, const TileGrid& grid,
                                   comm::Communicator& sp, int root, uint64_t buffer_key = 0);

// image [..., H, W] -> the tile of `rank` [..., h, w] (a view).
torch::Tensor tile_of(const torch::Tensor& image, const TileGrid& grid, int rank);

}  // namespace cmpi::parallel::spatial
