// A set of gathered units, walked through the stage's forward and backward
// passes in schedule order; a unit counts a gather each time it goes from
// released to requested. The step starts with everything released (the
// optimizer's step() releases all).
#include "plan/layer_gathers.h"

#include <algorithm>
#include <set>

namespace cmpi::plan {

std::vector<int64_t> zero_buckets(int64_t elements, int dp, int64_t bucket_bytes) {
  const int64_t max_piece = std::max<int64_t>(1, bucket_bytes / int64_t(sizeof(float)) / dp);
  std::vector<int64_t> buckets;
  for (int64_t start = 0; start < elements;) {
    const int64_t piece = std::min(max_piece, (elements - start + dp - 1) / dp);
    buckets.push_back(piece * dp);
    start += piece * dp;
  }
  return buckets;
}

void count_gathers(StageUnits& stage, const std::vector<bool>& forward_actions) {
  const auto& uses = stage.uses;
  const size_t n = uses.size();
  std::set<size_t> gathered;
  const auto request = [&](size_t use) {
    for (size_t u : uses[use])
      if (gathered.insert(u).second) ++stage.units[u].gathers;
  };
  const auto release_except = [&](size_t use, const std::vector<size_t>* keep) {
    for (size_t u : uses[use])
      if (!keep || std::find(keep->begin(), keep->end(), u) == keep->end()) gathered.erase(u);
  };
  for (bool forward : forward_actions) {
    if (forward) {
      for (size_t k = 0; k < n; ++k) {
        request(k);
        if (k + 1 < n) request(k + 1);
        if (k + 1 < n) release_except(k, &uses[k + 1]);
      }
    } else {
      for (size_t k = n; k-- > 0;) {
        request(k);
        if (k > 0) request(k - 1);
        if (k > 0)
          release_except(k, &uses[k - 1]);
        else if (stage.first_input_has_gradient)
          release_except(k, nullptr);
      }
    }
  }
}

}  // namespace cmpi::plan
