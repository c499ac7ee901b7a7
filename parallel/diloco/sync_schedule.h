// SyncSchedule: when DiLoCo synchronises which fragment (torch-free).
//
// The model's layers are cut into F fragments of consecutive layers (layer l
// of L belongs to fragment l * F / L; the embedding, and the tied table on
// both pipeline ends, to fragment 0; the final norm and an untied head to
// fragment F - 1). Fragment f is synchronised after the step that completes
// `done` steps where done >= 1 and (done - offset_f) % H == 0, offset_f =
// f * H / F (integer division): with F = 1 the whole model every H steps;
// with F > 1 (streaming DiLoCo, Douillard et al. 2025) the fragments in turn,
// H / F steps apart, so the dp link carries 1/F of the model at a time.
// Fragment f > 0 first syncs after offset_f steps (a shorter first interval).
// Everything is a function of the step count, so a resumed run continues
// the schedule with nothing saved.
#pragma once

#include <cstdint>
#include <vector>

namespace cmpi::parallel {

class SyncSchedule {
 public:
  // Throws std::invalid_argument for sync_every < 1, fragments < 1 or
  // fragments > sync_every (two fragments would share a step).
  SyncSchedule(int64_t sync_every, int64_t fragments);

  int64_t sync_every() const { return sync_every_; }
  int64_t fragments() const { return fragments_; }
  int64_t offset(int64_t fragment) const { return fragment * sync_every_ / fragments_; }
  // The fragments synchronised after the step that completes `steps_done`
  // steps, in order (empty: none).
  std::vector<int> due(int64_t steps_done) const;
  // Steps since fragment f's last sync after `steps_done` steps (its
  // position in the interval, 0 right after a sync).
  int64_t since_sync(int64_t fragment, int64_t steps_done) const;

  // The fragment of transformer block `layer` of `layers`.
  static int fragment_of_layer(int64_t layer, int64_t layers, int64_t fragments);

 private:
  int64_t sync_every_;
  int64_t fragments_;
};

}  // namespace cmpi::parallel
