// Each event is a few loops over the use's unit lists; "except what the
// neighbouring use reads" is a linear search of that use's list (a use reads
// one or two units).
#include "parallel/zero/zero3_gather_rules.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace cmpi::parallel {

Zero3GatherRules::Zero3GatherRules(std::vector<std::vector<size_t>> uses, size_t unit_count)
    : uses_(std::move(uses)) {
  for (size_t u = 0; u < uses_.size(); ++u)
    for (size_t unit : uses_[u])
      if (unit >= unit_count)
        throw std::invalid_argument("layer schedule: use " + std::to_string(u) + " reads unit " +
                                    std::to_string(unit) + " of " + std::to_string(unit_count));
}

const std::vector<size_t>& Zero3GatherRules::units_of(size_t use) const {
  if (use >= uses_.size())
    throw std::logic_error("per-layer ZeRO-3: the model ran use " + std::to_string(use) +
                           " of a schedule of " + std::to_string(uses_.size()) + " uses");
  return uses_[use];
}

void Zero3GatherRules::before_forward(size_t use, UnitGatherer& units) const {
  for (size_t unit : units_of(use)) units.gather(unit);
  if (use + 1 < uses_.size())
    for (size_t unit : uses_[use + 1]) units.prefetch(unit);
}

void Zero3GatherRules::after_forward(size_t use, bool recording_gradients,
                                     UnitGatherer& units) const {
  if (use + 1 < uses_.size())
    release_except(use, &uses_[use + 1], units);
  else if (!recording_gradients)
    release_except(use, nullptr, units);
}

void Zero3GatherRules::before_backward(size_t use, UnitGatherer& units) const {
  for (size_t unit : units_of(use)) units.gather(unit);
  if (use > 0)
    for (size_t unit : uses_[use - 1]) units.prefetch(unit);
}

void Zero3GatherRules::after_backward(size_t use, UnitGatherer& units) const {
  release_except(use, use > 0 ? &uses_[use - 1] : nullptr, units);
}

void Zero3GatherRules::release_except(size_t use, const std::vector<size_t>* keep,
                                      UnitGatherer& units) const {
  for (size_t unit : units_of(use))
    if (!keep || std::find(keep->begin(), keep->end(), unit) == keep->end()) units.release(unit);
}

}  // namespace cmpi::parallel
