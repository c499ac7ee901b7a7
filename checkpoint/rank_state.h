// RankState of a training rank: what a checkpoint must hold besides the
// parameters and optimizer state for a resumed run to continue bit for bit,
// and what only the same rank of the same layout can use:
//
//   comm/<group>/residual/<rule key>/<buffer key>  f32[]  error-feedback residual
//   comm/<group>/random/<rule key>                 u64[]  stochastic codec generator
//   comm/<group>/block_sparse_crossovers           u64[]  the crossovers its block-sparse
//                                                         routes measured (route pair, size
//                                                         class, crossover bits): decisions
//                                                         taken by timing, kept so that a
//                                                         resumed run takes the same routes
//   comm/<group>/adaptive_policy                   u64[]  preset auto's routes and what it
//                                                         learnt (comm/adaptive_policy.h,
//                                                         state_words); under another policy:
//                                                         dropped, decided afresh
//   torch/default_generator                        bytes  LibTorch CPU default generator
//   model/<name>                                   bytes  the model's own dropout generators
//   training/loss_scaler                           bytes  fp16's dynamic loss scale
//   (the generators come as GeneratorParts from the model, which knows them;
//   this file stays torch-free)
//   powersgd/residual/<tensor>, powersgd/q/<tensor> f32[]  PowerSGD's residual and Q
//   powersgd/progress                              u64[]  Q draws, then reductions per bucket
//
// Data sampling needs nothing here: every sample is a function of (run seed,
// split, step, index). Rule keys: comm/codec_state.h.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "checkpoint/shard_file.h"

namespace cmpi::parallel {
class DataParallelOptimizer;
class ProcessGroups;
}  // namespace cmpi::parallel

namespace cmpi::checkpoint {

// A random generator whose state a checkpoint keeps, by its rank-state name
// ("torch/default_generator", "model/<name>"): save returns its state bytes,
// load puts them back (throwing std::runtime_error naming `name` for bytes
// that are not a state of it). A part whose state is the same on every rank
// and means the same under any layout (fp16's loss scale) says so with
// `layout_independent`: a resume under another layout takes it from world
// rank 0's saved state instead of starting it afresh.
struct GeneratorPart {
  std::string name;
  std::function<std::string()> save;
  std::function<void(const std::string& bytes)> load;
  bool layout_independent = false;
};

RankState collect_rank_state(parallel::ProcessGroups& groups,
                             const std::vector<GeneratorPart>& generators,
                             parallel::DataParallelOptimizer& optimizer);

// What restore_rank_state could not put back.
struct RestoreReport {
  std::vector<std::string> dropped;  // saved keys this run has no place for
  // This run reduces with PowerSGD but the checkpoint holds no PowerSGD
  // state (saved without it): its Q's and residuals start afresh.
  bool powersgd_restarted = false;
};

// Puts every saved state back into its codec or generator. Keys this run
// does not have (another compression policy, another stage's layers) are
// listed in the report. Throws std::runtime_error naming the key for state
// of the wrong size.
RestoreReport restore_rank_state(const RankState& state, parallel::ProcessGroups& groups,
                                 const std::vector<GeneratorPart>& generators,
                                 parallel::DataParallelOptimizer& optimizer);

// The names of the error-feedback residuals in `state` ("comm/dp/residual/...").
std::vector<std::string> residual_names(const RankState& state);

}  // namespace cmpi::checkpoint
