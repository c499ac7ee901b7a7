#include "parallel/pipeline/pipeline_balance.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "parallel/pipeline/pipeline_stages.h"

namespace cmpi::parallel {
namespace {

using Real = long double;
constexpr Real kInfinity = std::numeric_limits<Real>::infinity();

// best[s][l]: the best value of stages [0, s) holding layers [0, l); choice
// [s][l]: the layer count of stage s - 1 there. `combine` folds one more
// stage's cost into the value of the stages before it; `allowed` rules a
// stage cost out (the second pass's cap).
template <typename Combine, typename Allowed>
std::vector<int64_t> best_partition(int64_t layers, int64_t stages,
                                    const std::vector<std::vector<Real>>& cost, Real start,
                                    Combine combine, Allowed allowed) {
  const auto L = size_t(layers), P = size_t(stages);
  std::vector<std::vector<Real>> best(P + 1, std::vector<Real>(L + 1, kInfinity));
  std::vector<std::vector<int64_t>> choice(P + 1, std::vector<int64_t>(L + 1, 0));
  best[0][0] = start;
  for (size_t s = 1; s <= P; ++s)
    // Every stage holds one layer at least: s stages hold s..L - (P - s).
    for (size_t l = s; l + (P - s) <= L; ++l)
      for (size_t k = 1; k + (s - 1) <= l; ++k) {
        const Real before = best[s - 1][l - k];
        const Real here = cost[s - 1][k];
        if (before == kInfinity || !allowed(here)) continue;
        const Real value = combine(before, here);
        // Strictly better only: among equals, the smallest count for this
        // stage (k grows), so earlier stages keep fewer layers.
        if (value < best[s][l]) {
          best[s][l] = value;
          choice[s][l] = int64_t(k);
        }
      }
  std::vector<int64_t> counts(P, 0);
  if (best[P][L] == kInfinity) return {};
  for (size_t s = P, l = L; s > 0; --s) {
    counts[s - 1] = choice[s][l];
    l -= size_t(choice[s][l]);
  }
  return counts;
}

}  // namespace

std::vector<int64_t> min_max_stage_layers(int64_t layers, int64_t stages, const StageCost& cost) {
  // The same checks and messages as the uniform split.
  const std::vector<int64_t> uniform = balanced_stage_layers(layers, stages);
  if (stages == 1) return uniform;
  // cost[s][k], k layers on stage s (k <= layers - stages + 1).
  const int64_t most = layers - stages + 1;
  std::vector<std::vector<Real>> table(size_t(stages), std::vector<Real>(size_t(most) + 1, 0));
  for (int64_t s = 0; s < stages; ++s)
    for (int64_t k = 1; k <= most; ++k) table[size_t(s)][size_t(k)] = cost(s, k);

  const auto max_pass = best_partition(
      layers, stages, table, 0.0L, [](Real a, Real b) { return std::max(a, b); },
      [](Real) { return true; });
  Real worst = 0;
  for (int64_t s = 0; s < stages; ++s)
    worst = std::max(worst, table[size_t(s)][size_t(max_pass[size_t(s)])]);
  const auto even = best_partition(
      layers, stages, table, 0.0L, [](Real a, Real b) { return a + b * b; },
      [worst](Real c) { return c <= worst; });
  return even.empty() ? max_pass : even;
}

}  // namespace cmpi::parallel
