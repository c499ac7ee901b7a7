// The halo exchange of spatial parallelism as an autograd function over the
// sp group's Communicator.
//
// Forward: this rank's tile x [N, C, h, w] becomes the local input of a
// window layer: its neighbours' border pixels (the halo, corners included
// for a square grid) around the own pixels the window reads, and pad_value
// where the window reaches past the true image boundary (0 for conv and
// average pooling, -inf for max pooling). The window then runs with no
// padding of its own and yields exactly the output tile the plan assigns.
//
// Backward: the gradient of each halo pixel goes back to the rank that owns
// that pixel, which adds it to its own input gradient; padding gradients are
// dropped. So input gradients at tile borders are exact (not constants
// written in place).
//
// Both directions travel as Communicator::halo_exchange calls of role
// `halo` (so a policy rule on group sp, role halo compresses them), one per
// axis with more than one tile: columns then rows in forward (the row
// exchange carries the column halos with it, which is how corners arrive),
// rows then columns in backward. Every rank of the sp group must call it
// with the same plan, and run backward over the same graph. Error-feedback
// keys: 4 * buffer_key + {0, 1} forward (columns, rows), + {2, 3} backward.
//
// The plan and the Communicator are remembered by address until backward
// has run: both must outlive the graph (layers own their plans).
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "comm/communicator.h"
#include "parallel/spatial/tile_geometry.h"

namespace cmpi::parallel::spatial {

torch::Tensor halo_exchange(const torch::Tensor& tile, const WindowPlan& plan,
                            comm::Communicator& sp, double pad_value = 0.0,
                            uint64_t buffer_key = 0);

// Checks that `sp` is the group `grid` was made for (same size); throws
// GeometryError naming the layer otherwise.
void require_group_matches(const TileGrid& grid, const comm::Communicator& sp,
                           const std::string& layer);

}  // namespace cmpi::parallel::spatial
