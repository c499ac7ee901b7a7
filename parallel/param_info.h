// ParamInfo: what the optimizer and gradient clipping need to know about a
// parameter of a (possibly tensor- or pipeline-parallel) model: whether this
// rank holds a distinct shard of it (tensor_parallel: its gradient norm must
// be summed over the tp group, not counted once), whether weight decay
// applies, and how its gradient must be treated where the parallel layout
// makes it special (the flags below). The model produces them; the function
// that parallelizes it (models/gpt_parallelize.cpp) sets the layout flags,
// because only it knows the pipeline and the tied table; the data-parallel
// optimizer consumes them. A flag travels with its tensor, so no name has to
// be matched against a list on the way.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace cmpi::parallel {

struct ParamInfo {
  std::string name;
  torch::Tensor tensor;
  bool tensor_parallel = false;  // sharded over tp: every tp rank holds a different slice
  bool weight_decay = true;      // false for biases, LayerNorm, position table

  // A copy of a parameter that another pipeline stage owns (the last stage's
  // copy of the tied embedding, kept the same bits as the first stage's):
  // the owner counts its gradient in the global norm, so this copy must not,
  // or the table would count twice.
  bool counted_on_other_stage = false;
  // Its gradient is sparse: only the rows of the step's tokens (an untied
  // token embedding's). It gets gradient buckets of its own, reduced with
  // role embedding_gradient, so the dp policy may send them block-sparse.
  bool sparse_gradient = false;
  // Its gradient changes after backward, before step() (the tied table on the
  // first stage, to which the last adds its copy's): its buckets are reduced
  // only in step(), never during backward.
  bool late_gradient = false;
  // The tied table on one end of the pipeline (pp > 1): the first and the
  // last stage each hold a copy, reduced over dp only by the first and shared
  // with the last (DataParallelOptimizerOptions::tied_gradient). Cut into
  // buckets of its own on both stages, so both cut it alike. At most one
  // parameter of a rank.
  bool tied_across_stages = false;
};

}  // namespace cmpi::parallel
