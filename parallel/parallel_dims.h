// ParallelDims: how the world's ranks split into data (dp), tensor (tp),
// pipeline (pp) and spatial (sp) parallel groups, plus the ZeRO stage.
//
// Rank order (Megatron's convention): tp varies fastest, then sp, then dp,
// then pp, i.e.  rank = tp_rank + tp * (sp_rank + sp * (dp_rank + dp * pp_rank)).
// Neighbouring ranks thus share the chattiest group (tp), which keeps it on
// one node when ranks are placed node by node.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace cmpi::parallel {

// The parts of the model that constrain the layout.
struct ModelShape {
  int64_t layers = 1;
  int64_t heads = 1;
  int64_t hidden = 1;
  int64_t vocab_size = 1;
  int64_t image_rows = 0;  // 0: the model has no spatial dimension to split
};

// A layout the world or the model cannot host. The message names the group.
class LayoutError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct GridCoord {
  int tp = 0, sp = 0, dp = 0, pp = 0;
};

struct ParallelDims {
  int dp = 1, tp = 1, pp = 1, sp = 1;
  int zero_stage = 0;

  // data <= 0 means "auto": whatever tp * pp * sp leaves of the world.
  // Throws LayoutError naming the group at fault.
  static ParallelDims resolve(int64_t data, int64_t tensor, int64_t pipeline, int64_t spatial,
                              int64_t zero_stage, int world_size, const ModelShape& model);

  int world_size() const { return dp * tp * pp * sp; }
  GridCoord coord_of(int rank) const;
  int rank_of(const GridCoord& c) const;
  std::string to_string() const;  // "dp=2 tp=2 pp=1 sp=1 zero=0"
};

}  // namespace cmpi::parallel
