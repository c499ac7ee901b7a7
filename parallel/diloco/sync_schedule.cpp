#include "parallel/diloco/sync_schedule.h"

#include <stdexcept>
#include <string>

namespace cmpi::parallel {

SyncSchedule::SyncSchedule(int64_t sync_every, int64_t fragments)
    : sync_every_(sync_every), fragments_(fragments) {
  if (sync_every < 1)
    throw std::invalid_argument("DiLoCo: sync_every must be >= 1, got " +
                                std::to_string(sync_every));
  if (fragments < 1 || fragments > sync_every)
    throw std::invalid_argument("DiLoCo: fragments must lie in [1, sync_every = " +
                                std::to_string(sync_every) + "], got " + std::to_string(fragments));
}

std::vector<int> SyncSchedule::due(int64_t steps_done) const {
  std::vector<int> out;
  if (steps_done < 1) return out;
  for (int64_t f = 0; f < fragments_; ++f) {
    const int64_t since = steps_done - offset(f);
    if (since >= 0 && since % sync_every_ == 0) out.push_back(int(f));
  }
  return out;
}

int64_t SyncSchedule::since_sync(int64_t fragment, int64_t steps_done) const {
  const int64_t since = steps_done - offset(fragment);
  return since < 0 ? steps_done : since % sync_every_;
}

int SyncSchedule::fragment_of_layer(int64_t layer, int64_t layers, int64_t fragments) {
  if (layers < 1 || layer < 0 || layer >= layers) return 0;
  return int(layer * fragments / layers);
}

}  // namespace cmpi::parallel
