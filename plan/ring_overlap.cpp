#include "plan/ring_overlap.h"

#include <algorithm>

namespace cmpi::plan {
namespace {

// Pairs of chunks a rank attends to at ring step `step` (its own block
// first: 3; every foreign block: 2).
double pairs_at(int step) {
  return step == 0 ? 3.0 : 2.0;
}

// The cp - 1 key/value hops, each behind its step's attention, the step's
// forward attention scaled by `compute_scale` (1 forward, 2 backward).
double key_value_hops_exposed(const RingBlock& ring, double compute_scale) {
  double exposed = 0;
  for (int step = 0; step + 1 < ring.cp; ++step)
    exposed += exposed_hop_seconds(ring.keys_values,
                                   compute_scale * pairs_at(step) * ring.pair_forward_seconds);
  return exposed;
}

}  // namespace

double exposed_hop_seconds(const RingHop& hop, double compute_seconds) {
  return std::max(hop.cpu_seconds, std::max(0.0, hop.seconds - compute_seconds));
}

double ring_forward_exposed_seconds(const RingBlock& ring) {
  return key_value_hops_exposed(ring, 1.0);
}

double ring_backward_exposed_seconds(const RingBlock& ring) {
  if (ring.cp < 2) return 0;
  return key_value_hops_exposed(ring, 2.0) + double(ring.cp) * ring.gradients.seconds;
}

double ring_exposed_seconds(const RingBlock& ring, int64_t blocks, int64_t recomputed) {
  const double forward = ring_forward_exposed_seconds(ring);
  return double(blocks) * (forward + ring_backward_exposed_seconds(ring)) +
         double(recomputed) * forward;
}

}  // namespace cmpi::plan
