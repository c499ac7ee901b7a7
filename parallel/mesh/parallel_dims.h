// ParallelDims: how the world's ranks split into data (dp), tensor (tp),
// pipeline (pp), spatial (sp) and context (cp) parallel groups, plus the ZeRO
// stage.
//
// The dimensions form a named mesh, declared once in kMesh below: each row
// names a dimension's group kind (whose name, "tp", is the dimension's name),
// its config key, its place in the rank formula and what it asks of the
// model. Rank arithmetic, the text form, the layout checks, group
// construction (ProcessGroups) and the planner's group members all iterate
// that table, so a new dimension is a new row (plus its two fields, which
// the static_asserts below insist on).
//
// Rank order (Megatron's convention): tp varies fastest, then cp, then sp,
// then dp, then pp, i.e.
//   rank = tp_rank + tp * (cp_rank + cp * (sp_rank + sp * (dp_rank + dp * pp_rank))).
// Neighbouring ranks thus share the chattiest groups (tp, then cp's ring),
// which keeps them on one node when ranks are placed node by node.
//
// Context parallelism splits every sequence over the cp ranks of a replica
// (parallel/context/context_shard.h); they hold the same parameters, so the
// dp group spans the cp dimension too (kGroupSpans): gradients are summed
// over dp x cp ranks in one reduction, and ZeRO shards over them.
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "comm/group_kind.h"

namespace cmpi::parallel {

// The parts of the model that constrain the layout.
struct ModelShape {
  int64_t layers = 1;
  int64_t heads = 1;
  int64_t hidden = 1;
  int64_t vocab_size = 1;
  int64_t vocab_multiple = 1;  // the tables are padded to a multiple of it x tp
  int64_t kv_heads = 0;        // grouped-query attention's key/value heads; 0: as many as heads
  int64_t mlp_width = 0;       // the MLP's inner width when set apart from hidden (0: not)
  int64_t image_rows = 0;      // 0: the model has no spatial dimension to split
  int64_t seq_len = 0;         // a language model's sequence length (0: none)
};

// A layout the world or the model cannot host. The message names the group.
class LayoutError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The mesh's dimensions, in the order the config lists them and to_string
// prints them (the rank formula's order is each row's rank_position).
enum class MeshDim { kDp, kTp, kPp, kSp, kCp };
constexpr int kMeshDimCount = 5;
// One requested size per dimension, indexed by MeshDim.
using MeshSizes = std::array<int64_t, kMeshDimCount>;

struct GridCoord {
  int tp = 0, sp = 0, dp = 0, pp = 0, cp = 0;
};

struct ParallelDims {
  int dp = 1, tp = 1, pp = 1, sp = 1, cp = 1;
  int zero_stage = 0;

  // data <= 0 means "auto": whatever tp * pp * sp (* cp) leaves of the world.
  // Throws LayoutError naming the group at fault.
  static ParallelDims resolve(int64_t data, int64_t tensor, int64_t pipeline, int64_t spatial,
                              int64_t zero_stage, int world_size, const ModelShape& model);
  // The same, one size per MeshDim; the auto-sized dimension's size <= 0
  // means "auto".
  static ParallelDims resolve(const MeshSizes& sizes, int64_t zero_stage, int world_size,
                              const ModelShape& model);

  int world_size() const;
  GridCoord coord_of(int rank) const;
  int rank_of(const GridCoord& c) const;
  std::string to_string() const;  // "dp=2 tp=2 pp=1 sp=1 cp=1 zero=0"
};

// What a dimension asks of the model: why `size` ranks along it cannot host
// `model`, or "" when they can. The text follows "<group> group: ".
std::string tp_misfit(int64_t size, const ModelShape& model);
std::string pp_misfit(int64_t size, const ModelShape& model);
std::string sp_misfit(int64_t size, const ModelShape& model);
std::string cp_misfit(int64_t size, const ModelShape& model);

struct MeshDimInfo {
  MeshDim dim;             // the row's own index (checked below)
  comm::GroupKind group;   // its communicator; comm::to_string(group) names the dimension
  const char* config_key;  // parallel.<config_key> sets its size
  int rank_position;       // 0: varies fastest in the rank formula
  bool auto_sized;         // its size may be "auto": what the others leave of the world
  int ParallelDims::*size;
  int GridCoord::*coord;
  std::string (*model_misfit)(int64_t size, const ModelShape& model);  // null: any size fits
};

inline constexpr MeshDimInfo kMesh[kMeshDimCount] = {
    {MeshDim::kDp, comm::GroupKind::kDp, "data", 3, true, &ParallelDims::dp, &GridCoord::dp,
     nullptr},
    {MeshDim::kTp, comm::GroupKind::kTp, "tensor", 0, false, &ParallelDims::tp, &GridCoord::tp,
     &tp_misfit},
    {MeshDim::kPp, comm::GroupKind::kPp, "pipeline", 4, false, &ParallelDims::pp, &GridCoord::pp,
     &pp_misfit},
    {MeshDim::kSp, comm::GroupKind::kSp, "spatial", 2, false, &ParallelDims::sp, &GridCoord::sp,
     &sp_misfit},
    {MeshDim::kCp, comm::GroupKind::kCp, "context", 1, false, &ParallelDims::cp, &GridCoord::cp,
     &cp_misfit},
};

// Groups that are copies of a dimension's group: the same ranks in a
// communicator of their own, so that their traffic is counted and governed
// by its own policy slice. ZeRO shards over the dp ranks.
struct GroupCopy {
  comm::GroupKind copy;
  MeshDim of;
};
inline constexpr GroupCopy kGroupCopies[] = {{comm::GroupKind::kZero, MeshDim::kDp}};

// A dimension whose group also takes in the ranks along another: the dp
// group spans cp, since the cp ranks of a replica hold the same parameters
// and each computed the gradient of its part of the sequences. Its ranks are
// ordered dp-major: group rank = dp_rank * cp + cp_rank.
struct GroupSpan {
  MeshDim dim;
  MeshDim also;
};
inline constexpr GroupSpan kGroupSpans[] = {{MeshDim::kDp, MeshDim::kCp}};

inline constexpr const MeshDimInfo& mesh_dim(MeshDim dim) {
  return kMesh[int(dim)];
}

// The dimensions from fastest- to slowest-varying in the rank formula.
constexpr std::array<MeshDim, kMeshDimCount> mesh_rank_order() {
  std::array<MeshDim, kMeshDimCount> order{};
  for (const MeshDimInfo& d : kMesh) order[size_t(d.rank_position)] = d.dim;
  return order;
}
inline constexpr std::array<MeshDim, kMeshDimCount> kMeshRankOrder = mesh_rank_order();

// The dimension whose ranks make up a group of `kind` (a copy's source for
// a copy); null for the world group.
constexpr const MeshDimInfo* mesh_dim_of(comm::GroupKind kind) {
  for (const GroupCopy& c : kGroupCopies)
    if (c.copy == kind) return &mesh_dim(c.of);
  for (const MeshDimInfo& d : kMesh)
    if (d.group == kind) return &d;
  return nullptr;
}

namespace mesh_checks {
constexpr bool well_formed() {
  bool position_taken[kMeshDimCount] = {};
  int auto_sized = 0;
  for (int i = 0; i < kMeshDimCount; ++i) {
    const MeshDimInfo& d = kMesh[i];
    if (int(d.dim) != i || d.rank_position < 0 || d.rank_position >= kMeshDimCount) return false;
    if (position_taken[d.rank_position]) return false;
    position_taken[d.rank_position] = true;
    if (d.group == comm::GroupKind::kWorld || d.size == nullptr || d.coord == nullptr) return false;
    auto_sized += d.auto_sized;
  }
  return auto_sized == 1;
}
}  // namespace mesh_checks
static_assert(mesh_checks::well_formed(),
              "kMesh: rows in MeshDim order, rank positions a permutation, one auto-sized row");
// A field without a row (or a row without a field) would drop out of rank
// arithmetic silently; these catch it.
static_assert(sizeof(GridCoord) == kMeshDimCount * sizeof(int), "a GridCoord field per kMesh row");
static_assert(sizeof(ParallelDims) == (kMeshDimCount + 1) * sizeof(int),
              "a ParallelDims size field per kMesh row, plus zero_stage");

inline int ParallelDims::world_size() const {
  int n = 1;
  for (const MeshDimInfo& d : kMesh) n *= this->*d.size;
  return n;
}

}  // namespace cmpi::parallel
