// DilocoSync: the outer side of DiLoCo (parallel.dp_sync: diloco; Douillard
// et al., arXiv 2311.08105) for one rank's parameters.
//
// Between syncs every dp rank is a replica of its own: the data-parallel
// optimizer built with reduce_over_dp = false takes AdamW steps on the
// replica's own gradients (its lr schedule, clipping and mixed precision as
// always), and nothing crosses dp. This class keeps, per fragment
// (sync_schedule.h), the outer weights (the weights of the last sync, float32)
// and the outer momentum buffer, and after the steps the schedule names:
//   1. per bucket of the fragment (bucket_bytes, cut as ZeroLayout cuts the
//      optimizer's buckets: tp-replicated parameters apart, the tied table
//      apart): the pseudo-gradient delta = outer - local weights;
//   2. delta summed over dp through the policy, role pseudo_gradient (so
//      zfp / fp8 / int8 with error feedback apply to it; docs/policy.md),
//      then divided by dp. The exceptions keep replicas bit-equal across
//      groups as the gradient path does (docs/policy.md, "Replicated
//      parameters"): tp-replicated parameters are summed exactly
//      (Communicator::exact_allreduce, never through the policy); the tied
//      table on the pipeline's ends is summed only by the first stage and
//      handed to the last (the tied share, PipelineTiedEmbedding);
//   3. the outer step (outer_nesterov.h) on outer weights and momentum;
//   4. the replica's weights become the outer weights: every replica (and
//      every copy of a replicated parameter) holds the same bits after a sync.
// The replica's AdamW moments are its own and stay (the paper's choice).
//
// The outer weights are taken from the parameters before the first inner
// step (before_inner_step), so that weights a checkpoint or model.init_from
// loaded after construction are where the outer optimizer starts; a
// checkpoint of the same layout puts its saved outer state back instead
// (save/load). Memory: two float32 copies of this rank's parameters plus one
// bucket of scratch (state_bytes).
//
// The sync runs on the calling thread after the step: it does not overlap
// the next inner steps' compute (streaming DiLoCo's overlap is not built).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "parallel/diloco/outer_nesterov.h"
#include "parallel/diloco/sync_schedule.h"
#include "parallel/param_info.h"
#include "parallel/zero/zero_layout.h"

namespace cmpi::parallel {

class ProcessGroups;

struct DilocoSyncOptions {
  OuterSgdSettings outer;
  int64_t sync_every = 32;
  int64_t fragments = 1;
  // Steps 0 .. warmup_steps - 1 reduce gradients over dp (the optimizer does,
  // built with reduce_over_dp); the outer weights are taken before step
  // warmup_steps and the schedule counts from there.
  int64_t warmup_steps = 0;
  // Per parameter (the order given), its fragment in [0, fragments).
  std::vector<int> fragment_of_param;
  int64_t bucket_bytes = 25LL << 20;  // per collective call
  // The tied table on the pipeline's first and last stage (the parameter
  // flagged tied_across_stages): the stage that `reduces` sums its
  // pseudo-gradient over dp; `share(part, data, n)` must then leave that
  // stage's values in data on both (PipelineTiedEmbedding::share_reduced).
  struct TiedShare {
    bool reduces = true;
    std::function<void(size_t part, float* data, size_t n)> share;
  };
  std::optional<TiedShare> tied;
};

class DilocoSync {
 public:
  // Error-feedback keys of the pseudo-gradient buckets: this base, plus the
  // fragment times kFragmentKeyStride, plus the bucket's index.
  static constexpr uint64_t kKeyBase = uint64_t(1) << 34;
  static constexpr uint64_t kFragmentKeyStride = uint64_t(1) << 20;
  // The tied share's parts: this base plus the tied bucket's ordinal (apart
  // from the gradient path's parts, which count from 0).
  static constexpr size_t kTiedPartBase = size_t(1) << 20;

  // Throws std::invalid_argument naming the culprit for a parameter that is
  // not a contiguous float32 CPU tensor, a fragment out of range, bad outer
  // settings, or a tied parameter without options.tied.
  DilocoSync(std::vector<ParamInfo> params, DilocoSyncOptions options, ProcessGroups& groups);

  // Whether step `step` (0-based) is one of the warm-up's, whose gradients
  // the optimizer reduces over dp: the replicas are one model until it ends.
  bool in_warmup(int64_t step) const { return step < options_.warmup_steps; }
  int64_t warmup_steps() const { return options_.warmup_steps; }

  // Before every step (0-based `step`): after the warm-up, takes the outer
  // weights from the parameters if nothing set them yet (the first inner
  // step, or a checkpoint without them), and always at the first step after
  // a warm-up (the weights every replica leaves from; a checkpoint saved
  // during the warm-up holds no outer state worth keeping).
  void before_inner_step(int64_t step);
  // After the step that completes `steps_done` steps: synchronises the
  // fragments due, counting steps from the end of the warm-up (collective
  // over dp, and over the tied pair for fragment 0 when the table is tied
  // across stages). Returns them (empty: none).
  const std::vector<int>& after_inner_step(int64_t steps_done);

  const SyncSchedule& schedule() const { return schedule_; }
  // Wall time of the last after_inner_step's syncs (0 when none ran).
  double last_sync_seconds() const { return last_sync_seconds_; }
  // Bytes this class holds: outer weights, momentum, one bucket of scratch.
  int64_t state_bytes() const;

  // The outer state (outer weights and momentum of every fragment) as bytes
  // for the checkpoint's rank state, and back; load throws
  // std::runtime_error for bytes of another shape.
  std::string save() const;
  void load(const std::string& bytes);

 private:
  struct Fragment {
    std::vector<size_t> params;        // indices into params_, in order
    std::optional<ZeroLayout> layout;  // dp = 1: buckets and flat offsets; none if no params
    std::vector<float> outer;
    std::vector<float> momentum;
  };
  void capture_outer();
  void sync_fragment(int f);
  // Copies flat [start, start + n) of fragment `f` between the parameters
  // and `flat` (to_flat: parameters -> flat).
  void copy_span(const Fragment& fragment, size_t start, size_t n, float* flat, bool to_flat) const;

  std::vector<ParamInfo> params_;
  DilocoSyncOptions options_;
  ProcessGroups& groups_;
  SyncSchedule schedule_;
  std::vector<Fragment> fragments_;
  std::vector<float> delta_;  // one bucket's pseudo-gradient
  bool outer_set_ = false;
  std::vector<int> last_synced_;
  double last_sync_seconds_ = 0;
};

}  // namespace cmpi::parallel
