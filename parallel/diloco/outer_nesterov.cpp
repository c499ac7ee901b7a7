#include "parallel/diloco/outer_nesterov.h"

namespace cmpi::parallel {

void outer_nesterov_step(const OuterSgdSettings& settings, const float* pseudo_gradient,
                         float* momentum, float* outer, size_t n) {
  const float lr = float(settings.lr), mu = float(settings.momentum);
  for (size_t i = 0; i < n; ++i) {
    const float g = pseudo_gradient[i];
    const float m = mu * momentum[i] + g;
    momentum[i] = m;
    outer[i] -= lr * (g + mu * m);
  }
}

}  // namespace cmpi::parallel
