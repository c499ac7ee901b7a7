// Halo exchange, axis by axis. Along one axis a tile's local input is
//   [pad_before | halo from the lower peer | own pixels read | halo from the
//    upper peer | pad_after]
// (AxisWindow); the lower peer sends its last pixels, the upper peer its
// first. Forward extends the tile along the columns, then extends that
// (already wider) tensor along the rows: the rows sent up and down include
// the column halos, so a diagonal neighbour's pixels arrive in two hops and
// no message goes to a corner. Backward undoes it in reverse: the gradient
// of the row halos (corners included) goes back to the row peers, who add it
// to their own wider tensor's gradient, and then the column halos' gradient
// goes back to the column peers, who add it to their tile's gradient.
#include "parallel/spatial/halo_exchange_op.h"

#include <string>
#include <vector>

namespace cmpi::parallel::spatial {
namespace {

using comm::HaloBuffers;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// One axis of one rank's exchange.
struct AxisExchange {
  int64_t dim = 0;  // tensor dim: 2 rows, 3 columns
  AxisWindow own;
  int64_t send_lo = 0;  // own first pixels the lower peer reads (its halo_after)
  int64_t send_hi = 0;  // own last pixels the upper peer reads (its halo_before)
  int lo_peer = HaloBuffers::kNoPeer;
  int hi_peer = HaloBuffers::kNoPeer;
  bool collective = false;  // more than one tile along the axis: every rank calls
  int64_t own_read() const { return own.tile.size - own.crop_before - own.crop_after; }
};

AxisExchange columns_of(const WindowPlan& plan, int rank) {
  const TileGrid& grid = plan.input();
  const int row = grid.row_of(rank), col = grid.col_of(rank);
  AxisExchange a;
  a.dim = 3;
  a.own = plan.col_window(col);
  a.collective = grid.cols() > 1;
  if (col > 0) {
    a.lo_peer = grid.rank_at(row, col - 1);
    a.send_lo = plan.col_window(col - 1).halo_after;
  }
  if (col + 1 < grid.cols()) {
    a.hi_peer = grid.rank_at(row, col + 1);
    a.send_hi = plan.col_window(col + 1).halo_before;
  }
  return a;
}

AxisExchange rows_of(const WindowPlan& plan, int rank) {
  const TileGrid& grid = plan.input();
  const int row = grid.row_of(rank), col = grid.col_of(rank);
  AxisExchange a;
  a.dim = 2;
  a.own = plan.row_window(row);
  a.collective = grid.rows() > 1;
  if (row > 0) {
    a.lo_peer = grid.rank_at(row - 1, col);
    a.send_lo = plan.row_window(row - 1).halo_after;
  }
  if (row + 1 < grid.rows()) {
    a.hi_peer = grid.rank_at(row + 1, col);
    a.send_hi = plan.row_window(row + 1).halo_before;
  }
  return a;
}

torch::Tensor empty_along(const torch::Tensor& like, int64_t dim, int64_t length) {
  std::vector<int64_t> sizes(like.sizes().begin(), like.sizes().end());
  sizes[size_t(dim)] = length;
  return torch::empty(sizes, like.options().memory_format(torch::MemoryFormat::Contiguous));
}

float* data_or_null(const torch::Tensor& t) {
  return t.numel() > 0 ? t.data_ptr<float>() : nullptr;
}

// One Communicator::halo_exchange: send_lo to the lower peer, send_hi to the
// upper; recv_lo from the lower peer, recv_hi from the upper.
void exchange(comm::Communicator& sp, const AxisExchange& a, const torch::Tensor& send_lo,
              const torch::Tensor& send_hi, torch::Tensor& recv_lo, torch::Tensor& recv_hi,
              uint64_t key) {
  HaloBuffers b;
  b.lo_peer = a.lo_peer;
  b.hi_peer = a.hi_peer;
  b.send_lo = data_or_null(send_lo);
  b.send_lo_count = size_t(send_lo.numel());
  b.send_hi = data_or_null(send_hi);
  b.send_hi_count = size_t(send_hi.numel());
  b.recv_lo = data_or_null(recv_lo);
  b.recv_lo_count = size_t(recv_lo.numel());
  b.recv_hi = data_or_null(recv_hi);
  b.recv_hi_count = size_t(recv_hi.numel());
  sp.halo_exchange(b, comm::Role::kHalo, key);
}

// Forward along one axis: x (the tile, or the tile already extended along
// the other axis) -> the local input along this axis.
torch::Tensor extend(const torch::Tensor& x, const AxisExchange& a, comm::Communicator& sp,
                     double pad_value, uint64_t key) {
  const int64_t n = x.size(a.dim);
  torch::Tensor recv_lo = empty_along(x, a.dim, a.lo_peer < 0 ? 0 : a.own.halo_before);
  torch::Tensor recv_hi = empty_along(x, a.dim, a.hi_peer < 0 ? 0 : a.own.halo_after);
  if (a.collective) {
    const torch::Tensor send_lo = x.narrow(a.dim, 0, a.lo_peer < 0 ? 0 : a.send_lo).contiguous();
    const int64_t hi_n = a.hi_peer < 0 ? 0 : a.send_hi;
    const torch::Tensor send_hi = x.narrow(a.dim, n - hi_n, hi_n).contiguous();
    exchange(sp, a, send_lo, send_hi, recv_lo, recv_hi, key);
  }
  std::vector<torch::Tensor> parts;
  if (a.own.pad_before > 0)
    parts.push_back(empty_along(x, a.dim, a.own.pad_before).fill_(pad_value));
  if (recv_lo.size(a.dim) > 0) parts.push_back(recv_lo);
  parts.push_back(x.narrow(a.dim, a.own.crop_before, a.own_read()));
  if (recv_hi.size(a.dim) > 0) parts.push_back(recv_hi);
  if (a.own.pad_after > 0) parts.push_back(empty_along(x, a.dim, a.own.pad_after).fill_(pad_value));
  return parts.size() == 1 ? parts[0] : torch::cat(parts, a.dim);
}

// Backward along one axis: the gradient of extend's output -> the gradient
// of its input, with the halo gradients returned to (and received from) the
// peers that own those pixels.
torch::Tensor return_halo_gradients(const torch::Tensor& g, const AxisExchange& a,
                                    comm::Communicator& sp, int64_t input_length, uint64_t key) {
  const int64_t own_at = a.own.pad_before + a.own.halo_before;
  torch::Tensor grad = torch::zeros_like(empty_along(g, a.dim, input_length));
  grad.narrow(a.dim, a.own.crop_before, a.own_read()).copy_(g.narrow(a.dim, own_at, a.own_read()));
  if (!a.collective) return grad;
  const int64_t lo_n = a.lo_peer < 0 ? 0 : a.send_lo, hi_n = a.hi_peer < 0 ? 0 : a.send_hi;
  const torch::Tensor halo_lo =
      g.narrow(a.dim, a.own.pad_before, a.lo_peer < 0 ? 0 : a.own.halo_before).contiguous();
  const torch::Tensor halo_hi =
      g.narrow(a.dim, own_at + a.own_read(), a.hi_peer < 0 ? 0 : a.own.halo_after).contiguous();
  torch::Tensor from_lo = empty_along(g, a.dim, lo_n), from_hi = empty_along(g, a.dim, hi_n);
  exchange(sp, a, halo_lo, halo_hi, from_lo, from_hi, key);
  if (lo_n > 0) grad.narrow(a.dim, 0, lo_n).add_(from_lo);
  if (hi_n > 0) grad.narrow(a.dim, input_length - hi_n, hi_n).add_(from_hi);
  return grad;
}

void require_tile(const torch::Tensor& x, const WindowPlan& plan, int rank) {
  const std::string where = "layer " + plan.layer() + ": sp rank " + std::to_string(rank);
  if (!x.defined() || x.scalar_type() != torch::kFloat || !x.device().is_cpu() || x.dim() != 4)
    throw std::invalid_argument(where + ": expects a float32 CPU tile [N, C, H, W]");
  const Span rows = plan.input().row_span(plan.input().row_of(rank));
  const Span cols = plan.input().col_span(plan.input().col_of(rank));
  if (x.size(2) != rows.size || x.size(3) != cols.size)
    throw std::invalid_argument(where + ": tile is " + std::to_string(x.size(2)) + " x " +
                                std::to_string(x.size(3)) + ", the plan gives this rank " +
                                std::to_string(rows.size) + " x " + std::to_string(cols.size) +
                                " of the " + std::to_string(plan.input().height()) + " x " +
                                std::to_string(plan.input().width()) + " image");
}

struct HaloExchangeFunction : torch::autograd::Function<HaloExchangeFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const WindowPlan* plan,
                               comm::Communicator* sp, double pad_value, int64_t key) {
    ctx->saved_data["plan"] = int64_t(reinterpret_cast<intptr_t>(plan));
    ctx->saved_data["sp"] = int64_t(reinterpret_cast<intptr_t>(sp));
    ctx->saved_data["key"] = key;
    ctx->saved_data["rows"] = x.size(2);
    ctx->saved_data["cols"] = x.size(3);
    const uint64_t base = uint64_t(key) * 4;
    const torch::Tensor wide =
        extend(x.contiguous(), columns_of(*plan, sp->rank()), *sp, pad_value, base + 0);
    return extend(wide, rows_of(*plan, sp->rank()), *sp, pad_value, base + 1);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto* plan =
        reinterpret_cast<const WindowPlan*>(intptr_t(ctx->saved_data["plan"].toInt()));
    auto* sp = reinterpret_cast<comm::Communicator*>(intptr_t(ctx->saved_data["sp"].toInt()));
    const uint64_t base = uint64_t(ctx->saved_data["key"].toInt()) * 4;
    const torch::Tensor g = grads[0].contiguous();
    const torch::Tensor g_wide = return_halo_gradients(g, rows_of(*plan, sp->rank()), *sp,
                                                       ctx->saved_data["rows"].toInt(), base + 2);
    const torch::Tensor g_tile = return_halo_gradients(g_wide, columns_of(*plan, sp->rank()), *sp,
                                                       ctx->saved_data["cols"].toInt(), base + 3);
    return {g_tile, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

void require_group_matches(const TileGrid& grid, const comm::Communicator& sp,
                           const std::string& layer) {
  if (sp.size() != grid.ranks())
    throw GeometryError("layer " + layer + ": its tile grid is for " +
                        std::to_string(grid.ranks()) + " sp ranks, the " +
                        comm::to_string(sp.kind()) + " group has " + std::to_string(sp.size()) +
                        " (parallel.spatial)");
}

torch::Tensor halo_exchange(const torch::Tensor& tile, const WindowPlan& plan,
                            comm::Communicator& sp, double pad_value, uint64_t buffer_key) {
  require_group_matches(plan.input(), sp, plan.layer());
  require_tile(tile, plan, sp.rank());
  return HaloExchangeFunction::apply(tile, &plan, &sp, pad_value, int64_t(buffer_key));
}

}  // namespace cmpi::parallel::spatial
