// Gather: one allgather of the flattened tiles (counts differ with uneven
// tiles), then every rank's block is copied into its place in the image.
// Backward slices this rank's tile out of the image gradient (see
// tile_gather.h for why no message is needed). The root variant is one
// alltoall each way in which only the root receives (forward) or sends
// (backward): the image gradient is cut into tiles on the root, block r for
// rank r.
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

// Root gather: alltoall where only the root receives (forward) or sends
// (backward), so no rank gets what it does not need.
struct GatherTilesToRoot : torch::autograd::Function<GatherTilesToRoot> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& tile,
                               const TileGrid* grid, comm::Communicator* sp, int64_t root,
                               int64_t key) {
    ctx->saved_data["grid"] = int64_t(reinterpret_cast<intptr_t>(grid));
    ctx->saved_data["sp"] = int64_t(reinterpret_cast<intptr_t>(sp));
    ctx->saved_data["root"] = root;
    ctx->saved_data["key"] = key;
    ctx->saved_data["batch"] = tile.size(0);
    ctx->saved_data["channels"] = tile.size(1);
    const int me = sp->rank(), ranks = grid->ranks();
    const int64_t lead = tile.size(0) * tile.size(1);
    const torch::Tensor local = tile.contiguous();
    std::vector<size_t> send(size_t(ranks), 0), recv(size_t(ranks), 0);
    send[size_t(root)] = size_t(local.numel());
    if (me == root)
      for (int r = 0; r < ranks; ++r) recv[size_t(r)] = size_t(lead * grid->tile_pixels(r));
    const int64_t total = me == root ? lead * grid->height() * grid->width() : 0;
    torch::Tensor all = torch::empty({total}, local.options());
    sp->alltoall(local.data_ptr<float>(), send, all.data_ptr<float>(), recv,
                 comm::Role::kActivation, uint64_t(key));
    if (me != root) return torch::empty({0}, local.options());
    torch::Tensor image =
        torch::empty({tile.size(0), tile.size(1), grid->height(), grid->width()}, local.options());
    int64_t offset = 0;
    for (int r = 0; r < ranks; ++r) {
      const Span rows = grid->row_span(grid->row_of(r)), cols = grid->col_span(grid->col_of(r));
      tile_of(image, *grid, r)
          .copy_(all.narrow(0, offset, int64_t(recv[size_t(r)]))
                     .view({tile.size(0), tile.size(1), rows.size, cols.size}));
      offset += int64_t(recv[size_t(r)]);
    }
    return image;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto* grid = reinterpret_cast<const TileGrid*>(intptr_t(ctx->saved_data["grid"].toInt()));
    auto* sp = reinterpret_cast<comm::Communicator*>(intptr_t(ctx->saved_data["sp"].toInt()));
    const int root = int(ctx->saved_data["root"].toInt()), me = sp->rank(), ranks = grid->ranks();
    const int64_t batch = ctx->saved_data["batch"].toInt();
    const int64_t channels = ctx->saved_data["channels"].toInt();
    const int64_t lead = batch * channels;
    std::vector<size_t> send(size_t(ranks), 0), recv(size_t(ranks), 0);
    std::vector<torch::Tensor> blocks;
    if (me == root) {
      for (int r = 0; r < ranks; ++r) {
        blocks.push_back(tile_of(grads[0], *grid, r).contiguous().view({-1}));
        send[size_t(r)] = size_t(blocks.back().numel());
      }
    }
    const Span rows = grid->row_span(grid->row_of(me)), cols = grid->col_span(grid->col_of(me));
    recv[size_t(root)] = size_t(lead * rows.size * cols.size);
    const torch::Tensor out = blocks.empty() ? torch::empty({0}) : torch::cat(blocks);
    torch::Tensor own = torch::empty({batch, channels, rows.size, cols.size});
    sp->alltoall(out.data_ptr<float>(), send, own.data_ptr<float>(), recv,
                 comm::Role::kActivationGrad, uint64_t(ctx->saved_data["key"].toInt()));
    return {own, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

void require_own_tile(const torch::Tensor& tile, const TileGrid& grid, const comm::Communicator& sp,
                      const char* op) {
  require_group_matches(grid, sp, op);
  const Span rows = grid.row_span(grid.row_of(sp.rank()));
  const Span cols = grid.col_span(grid.col_of(sp.rank()));
  if (tile.dim() != 4 || tile.scalar_type() != torch::kFloat || tile.size(2) != rows.size ||
      tile.size(3) != cols.size)
    throw std::invalid_argument(std::string(op) + ": sp rank " + std::to_string(sp.rank()) +
                                " expects a float32 tile [N, C, " + std::to_string(rows.size) +
                                ", " + std::to_string(cols.size) + "]");
}

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
  require_own_tile(tile, grid, sp, "gather_tiles");
  return GatherTiles::apply(tile, &grid, &sp, int64_t(buffer_key));
}

torch::Tensor gather_tiles_to_root(const torch::Tensor& tile, const TileGrid& grid,
                                   comm::Communicator& sp, int root, uint64_t buffer_key) {
  require_own_tile(tile, grid, sp, "gather_tiles_to_root");
  if (root < 0 || root >= sp.size())
    throw std::invalid_argument("gather_tiles_to_root: root " + std::to_string(root) +
                                " is not a rank of the " + std::to_string(sp.size()) +
                                "-rank sp group");
  return GatherTilesToRoot::apply(tile, &grid, &sp, int64_t(root), int64_t(buffer_key));
}

}  // namespace cmpi::parallel::spatial
