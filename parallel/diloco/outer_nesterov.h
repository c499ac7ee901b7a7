// The outer optimizer of DiLoCo (Douillard et al., "DiLoCo: Distributed
// Low-Communication Training of Language Models", arXiv 2311.08105): SGD with
// Nesterov momentum on the averaged pseudo-gradient. Torch-free: it works on
// float spans, so the sync (diloco_sync.h) runs it bucket by bucket and the
// tests hold it to a hand computation.
//
// With g the averaged pseudo-gradient (outer weights minus the replica's
// weights after its inner steps, averaged over the dp replicas), momentum
// buffer m (zero before the first outer step), rate lr and momentum mu, per
// element (PyTorch's SGD with nesterov=True and no dampening):
//   m <- mu * m + g
//   outer <- outer - lr * (g + mu * m)
// lr 1, mu 0 makes outer the average of the replicas' weights: the step of
// plain periodic model averaging.
#pragma once

#include <cstddef>

namespace cmpi::parallel {

struct OuterSgdSettings {
  double lr = 0.7;        // parallel.diloco.outer_lr
  double momentum = 0.9;  // parallel.diloco.outer_momentum
};

// One outer step on n elements. Arithmetic in float32 (the rate and momentum
// rounded to float once), element by element in order, so every replica that
// holds the same inputs computes the same bits.
void outer_nesterov_step(const OuterSgdSettings& settings, const float* pseudo_gradient,
                         float* momentum, float* outer, size_t n);

}  // namespace cmpi::parallel
