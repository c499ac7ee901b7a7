#include "parallel/parallel_dims.h"

namespace cmpi::parallel {
namespace {

[[noreturn]] void fail(const std::string& group, const std::string& why) {
  throw LayoutError(group + " group: " + why);
}

void require_positive(const std::string& group, const std::string& key, int64_t value) {
  if (value < 1) fail(group, "parallel." + key + " must be >= 1, got " + std::to_string(value));
}

}  // namespace

ParallelDims ParallelDims::resolve(int64_t data, int64_t tensor, int64_t pipeline, int64_t spatial,
                                   int64_t zero_stage, int world_size, const ModelShape& model) {
  require_positive("tp", "tensor", tensor);
  require_positive("pp", "pipeline", pipeline);
  require_positive("sp", "spatial", spatial);
  if (zero_stage < 0 || zero_stage > 3)
    fail("zero", "parallel.zero_stage must be 0, 1, 2 or 3, got " + std::to_string(zero_stage));
  const int64_t model_parallel = tensor * pipeline * spatial;
  const std::string mp_text = "tensor(" + std::to_string(tensor) + ") x pipeline(" +
                              std::to_string(pipeline) + ") x spatial(" + std::to_string(spatial) +
                              ") = " + std::to_string(model_parallel);
  if (data <= 0) {
    if (world_size % model_parallel != 0)
      fail("dp", "world size " + std::to_string(world_size) + " is not divisible by " + mp_text +
                     ", so parallel.data: auto has no whole value");
    data = world_size / model_parallel;
  } else if (data * model_parallel != world_size) {
    fail("dp", "data(" + std::to_string(data) + ") x " + mp_text + " = " +
                   std::to_string(data * model_parallel) + " ranks, but the world has " +
                   std::to_string(world_size));
  }

  if (model.heads % tensor != 0)
    fail("tp", "model.heads (" + std::to_string(model.heads) +
                   ") is not divisible by parallel.tensor (" + std::to_string(tensor) + ")");
  if (model.vocab_size % tensor != 0)
    fail("tp", "model.vocab_size (" + std::to_string(model.vocab_size) +
                   ") is not divisible by parallel.tensor (" + std::to_string(tensor) +
                   "); the vocabulary is split across the tp group");
  if (model.hidden % tensor != 0)
    fail("tp", "model.hidden (" + std::to_string(model.hidden) +
                   ") is not divisible by parallel.tensor (" + std::to_string(tensor) + ")");
  if (model.layers < pipeline)
    fail("pp", "model.layers (" + std::to_string(model.layers) + ") < parallel.pipeline (" +
                   std::to_string(pipeline) + "): every stage needs at least one layer");
  if (spatial > 1 && model.image_rows == 0)
    fail("sp", "parallel.spatial = " + std::to_string(spatial) +
                   " but the model has no spatial dimension to split (a GPT needs spatial: 1)");
  // Uneven tiles are allowed: the tile geometry (parallel/spatial/) checks
  // whether a layout fits the model's layers, naming the layer.

  ParallelDims dims;
  dims.dp = int(data);
  dims.tp = int(tensor);
  dims.pp = int(pipeline);
  dims.sp = int(spatial);
  dims.zero_stage = int(zero_stage);
  return dims;
}

GridCoord ParallelDims::coord_of(int rank) const {
  GridCoord c;
  c.tp = rank % tp;
  rank /= tp;
  c.sp = rank % sp;
  rank /= sp;
  c.dp = rank % dp;
  c.pp = rank / dp;
  return c;
}

int ParallelDims::rank_of(const GridCoord& c) const {
  return c.tp + tp * (c.sp + sp * (c.dp + dp * c.pp));
}

std::string ParallelDims::to_string() const {
  return "dp=" + std::to_string(dp) + " tp=" + std::to_string(tp) + " pp=" + std::to_string(pp) +
         " sp=" + std::to_string(sp) + " zero=" + std::to_string(zero_stage);
}

}  // namespace cmpi::parallel
