#include "parallel/mesh/parallel_dims.h"

#include <algorithm>

namespace cmpi::parallel {
namespace {

[[noreturn]] void fail(const std::string& group, const std::string& why) {
  throw LayoutError(group + " group: " + why);
}

std::string name_of(const MeshDimInfo& d) {
  return comm::to_string(d.group);
}

void require_positive(const MeshDimInfo& d, int64_t value) {
  if (value < 1)
    fail(name_of(d),
         "parallel." + std::string(d.config_key) + " must be >= 1, got " + std::to_string(value));
}

}  // namespace

std::string tp_misfit(int64_t tensor, const ModelShape& model) {
  // Grouped-query attention: tp splits the key/value heads, each with its group.
  if (model.kv_heads > 0 && model.kv_heads % tensor != 0)
    return "model.kv_heads (" + std::to_string(model.kv_heads) +
           ") is not divisible by parallel.tensor (" + std::to_string(tensor) +
           "); tensor parallelism splits the key/value heads, each with its query heads";
  if (model.mlp_width > 0 && model.mlp_width % tensor != 0)
    return "model.intermediate_size (" + std::to_string(model.mlp_width) +
           ") is not divisible by parallel.tensor (" + std::to_string(tensor) + ")";
  if (model.heads % tensor != 0)
    return "model.heads (" + std::to_string(model.heads) +
           ") is not divisible by parallel.tensor (" + std::to_string(tensor) + ")";
  // The vocabulary is padded to a multiple of vocab_multiple x tp rows and
  // split evenly; a rank whose rows would all be padding has no logit to
  // offer a softmax, which the vocab-parallel cross-entropy cannot take.
  const int64_t multiple = std::max<int64_t>(model.vocab_multiple, 1) * tensor;
  const int64_t rows = (model.vocab_size + multiple - 1) / multiple * multiple / tensor;
  if ((tensor - 1) * rows >= model.vocab_size)
    return "model.vocab_size (" + std::to_string(model.vocab_size) + ") padded to a multiple of " +
           "model.vocab_multiple (" + std::to_string(model.vocab_multiple) +
           ") x parallel.tensor (" + std::to_string(tensor) + ") leaves the last tp rank " +
           std::to_string(rows) + " rows of padding only; lower model.vocab_multiple";
  if (model.hidden % tensor != 0)
    return "model.hidden (" + std::to_string(model.hidden) +
           ") is not divisible by parallel.tensor (" + std::to_string(tensor) + ")";
  return "";
}

std::string pp_misfit(int64_t pipeline, const ModelShape& model) {
  if (model.layers < pipeline)
    return "model.layers (" + std::to_string(model.layers) + ") < parallel.pipeline (" +
           std::to_string(pipeline) + "): every stage needs at least one layer";
  return "";
}

std::string sp_misfit(int64_t spatial, const ModelShape& model) {
  // Uneven tiles are allowed: the tile geometry (parallel/spatial/) checks
  // whether a layout fits the model's layers, naming the layer.
  if (spatial > 1 && model.image_rows == 0)
    return "parallel.spatial = " + std::to_string(spatial) +
           " but the model has no spatial dimension to split (a GPT needs spatial: 1)";
  return "";
}

std::string cp_misfit(int64_t context, const ModelShape& model) {
  if (context == 1) return "";
  if (model.image_rows > 0 || model.seq_len == 0)
    return "parallel.context = " + std::to_string(context) +
           " but the model has no sequence to split (a ResNet needs context: 1)";
  // Balanced causal work: each rank holds chunks i and 2N-1-i of 2N
  // (parallel/context/context_shard.h).
  if (model.seq_len % (2 * context) != 0)
    return "model.seq_len (" + std::to_string(model.seq_len) +
           ") is not divisible by 2 x parallel.context (" + std::to_string(2 * context) +
           "): each context rank holds two of 2 x context equal chunks of every sequence";
  return "";
}

ParallelDims ParallelDims::resolve(int64_t data, int64_t tensor, int64_t pipeline, int64_t spatial,
                                   int64_t zero_stage, int world_size, const ModelShape& model) {
  MeshSizes sizes{};
  sizes[size_t(MeshDim::kDp)] = data;
  sizes[size_t(MeshDim::kTp)] = tensor;
  sizes[size_t(MeshDim::kPp)] = pipeline;
  sizes[size_t(MeshDim::kSp)] = spatial;
  sizes[size_t(MeshDim::kCp)] = 1;
  return resolve(sizes, zero_stage, world_size, model);
}

ParallelDims ParallelDims::resolve(const MeshSizes& requested, int64_t zero_stage, int world_size,
                                   const ModelShape& model) {
  MeshSizes sizes = requested;
  const MeshDimInfo* auto_dim = nullptr;
  for (const MeshDimInfo& d : kMesh)
    if (d.auto_sized)
      auto_dim = &d;
    else
      require_positive(d, sizes[size_t(d.dim)]);
  if (zero_stage < 0 || zero_stage > 3)
    fail("zero", "parallel.zero_stage must be 0, 1, 2 or 3, got " + std::to_string(zero_stage));

  // The other dimensions fix how many ranks one auto-sized slice takes,
  // e.g. "tensor(2) x pipeline(1) x spatial(1) = 2".
  int64_t others = 1;
  std::string others_text;
  for (const MeshDimInfo& d : kMesh) {
    if (&d == auto_dim) continue;
    others *= sizes[size_t(d.dim)];
    others_text += std::string(others_text.empty() ? "" : " x ") + d.config_key + "(" +
                   std::to_string(sizes[size_t(d.dim)]) + ")";
  }
  others_text += " = " + std::to_string(others);
  int64_t& auto_size = sizes[size_t(auto_dim->dim)];
  const std::string auto_name = name_of(*auto_dim);
  if (auto_size <= 0) {
    if (world_size % others != 0)
      fail(auto_name, "world size " + std::to_string(world_size) + " is not divisible by " +
                          others_text + ", so parallel." + auto_dim->config_key +
                          ": auto has no whole value");
    auto_size = world_size / others;
  } else if (auto_size * others != world_size) {
    fail(auto_name, std::string(auto_dim->config_key) + "(" + std::to_string(auto_size) + ") x " +
                        others_text + " = " + std::to_string(auto_size * others) +
                        " ranks, but the world has " + std::to_string(world_size));
  }

  for (const MeshDimInfo& d : kMesh) {
    if (d.model_misfit == nullptr) continue;
    const std::string why = d.model_misfit(sizes[size_t(d.dim)], model);
    if (!why.empty()) fail(name_of(d), why);
  }

  ParallelDims dims;
  for (const MeshDimInfo& d : kMesh) dims.*d.size = int(sizes[size_t(d.dim)]);
  dims.zero_stage = int(zero_stage);
  return dims;
}

GridCoord ParallelDims::coord_of(int rank) const {
  GridCoord c;
  for (size_t i = 0; i < kMeshRankOrder.size(); ++i) {
    const MeshDimInfo& d = mesh_dim(kMeshRankOrder[i]);
    // The slowest dimension takes the rest, as the formula's outermost term.
    const bool slowest = i + 1 == kMeshRankOrder.size();
    c.*d.coord = slowest ? rank : rank % this->*d.size;
    rank /= this->*d.size;
  }
  return c;
}

int ParallelDims::rank_of(const GridCoord& c) const {
  // Horner's scheme from the slowest dimension in: tp + tp * (sp + sp * (...)).
  int rank = 0;
  for (auto it = kMeshRankOrder.rbegin(); it != kMeshRankOrder.rend(); ++it) {
    const MeshDimInfo& d = mesh_dim(*it);
    rank = c.*d.coord + this->*d.size * rank;
  }
  return rank;
}

std::string ParallelDims::to_string() const {
  std::string text;
  for (const MeshDimInfo& d : kMesh) text += name_of(d) + "=" + std::to_string(this->*d.size) + " ";
  return text + "zero=" + std::to_string(zero_stage);
}

}  // namespace cmpi::parallel
