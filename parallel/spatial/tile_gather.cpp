// Gather: one allgather of the flattened tiles (counts differ with uneven
// tiles), then every rank's block is copied into its place in the image.
// Backward slices this rank's tile out of the image gradient (see
// tile_gather.h for why no message is needed).
#include "parallel/spatial/tile_gather.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "parallel/spatial/halo_exchange_op.h"

namespace cmpi::parallel::spatial {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct GatherTiles : torch::autograd::Function<GatherTiles> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& tile,
                               const TileGrid* grid, comm::Communicator* sp, int64_t key) {
    ctx->saved_data["grid"] = int64_t(reinterpret_cast<intptr_t>(grid));
    ctx->saved_data["rank"] = int64_t(sp->rank());
    const int64_t lead = tile.size(0) * tile.size(1);  // N * C
    std::vector<size_t> counts(size_t(grid->ranks()));
    for (int r = 0; r < grid->ranks(); ++r) counts[size_t(r)] = size_t(lead * grid->tile_pixels(r));
    const torch::Tensor local = tile.contiguous();
    torch::Tensor all =
        torch::empty({int64_t(lead * grid->height() * grid->width())}, local.options());
    sp->allgather(local.data_ptr<float>(), all.data_ptr<float>(), counts, comm::Role::kActivation,
                  uint64_t(key));
    torch::Tensor image =
        torch::empty({tile.size(0), tile.size(1), grid->height(), grid->width()}, local.options());
    int64_t offset = 0;
    for (int r = 0; r < grid->ranks(); ++r) {
      const Span rows = grid->row_span(grid->row_of(r)), cols = grid->col_span(grid->col_of(r));
      tile_of(image, *grid, r)
          .copy_(all.narrow(0, offset, int64_t(counts[size_t(r)]))
                     .view({tile.size(0), tile.size(1), rows.size, cols.size}));
      offset += int64_t(counts[size_t(r)]);
    }
    return image;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto* grid = reinterpret_cast<const TileGrid*>(intptr_t(ctx->saved_data["grid"].toInt()));
    const int rank = int(ctx->saved_data["rank"].toInt());
    return {tile_of(grads[0], *grid, rank).contiguous(), torch::Tensor(), torch::Tensor(),
            torch::Tensor()};
  }
};

}  // namespace

torch::Tensor tile_of(const torch::Tensor& image, const TileGrid& grid, int rank) {
  if (image.dim() < 2 || image.size(-2) != grid.height() || image.size(-1) != grid.width())
    throw std::invalid_argument("tile_of: image is not " + std::to_string(grid.height()) + " x " +
                                std::to_string(grid.width()) + " in its last two dims");
  const Span rows = grid.row_span(grid.row_of(rank)), cols = grid.col_span(grid.col_of(rank));
  return image.narrow(-2, rows.start, rows.size).narrow(-1, cols.start, cols.size);
}

torch::Tensor gather_tiles(const torch::Tensor& tile, const TileGrid& grid, comm::Communicator& sp,
                           uint64_t buffer_key) {
  require_group_matches(grid, sp, "gather_tiles");
  const Span rows = grid.row_span(grid.row_of(sp.rank()));
  const Span cols = grid.col_span(grid.col_of(sp.rank()));
  if (tile.dim() != 4 || tile.scalar_type() != torch::kFloat || tile.size(2) != rows.size ||
      tile.size(3) != cols.size)
    throw std::invalid_argument("gather_tiles: sp rank " + std::to_string(sp.rank()) +
                                " expects a float32 tile [N, C, " + std::to_string(rows.size) +
                                ", " + std::to_string(cols.size) + "]");
  return GatherTiles::apply(tile, &grid, &sp, int64_t(buffer_key));
}

}  // namespace cmpi::parallel::spatial
