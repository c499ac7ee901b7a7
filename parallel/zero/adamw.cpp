#include "parallel/zero/adamw.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace cmpi::parallel {

void validate(const AdamWOptions& o) {
  auto fail = [](const char* field, double value, const char* rule) {
    throw std::invalid_argument(std::string("AdamW ") + field + " = " + std::to_string(value) +
                                ": " + rule);
  };
  if (!(o.lr >= 0)) fail("lr", o.lr, "must be >= 0");
  if (!(o.eps >= 0)) fail("eps", o.eps, "must be >= 0");
  if (!(o.weight_decay >= 0)) fail("weight_decay", o.weight_decay, "must be >= 0");
  if (!(o.beta1 >= 0 && o.beta1 < 1)) fail("beta1", o.beta1, "must lie in [0, 1)");
  if (!(o.beta2 >= 0 && o.beta2 < 1)) fail("beta2", o.beta2, "must lie in [0, 1)");
}

AdamWStep::AdamWStep(const AdamWOptions& o, double lr, int64_t step) {
  if (step < 1) throw std::invalid_argument("AdamW step count must start at 1");
  if (!(lr >= 0))
    throw std::invalid_argument("AdamW lr = " + std::to_string(lr) + ": must be >= 0");
  const double bias_correction1 = 1.0 - std::pow(o.beta1, double(step));
  const double bias_correction2 = 1.0 - std::pow(o.beta2, double(step));
  beta1 = float(o.beta1);
  one_minus_beta1 = float(1.0 - o.beta1);
  beta2 = float(o.beta2);
  one_minus_beta2 = float(1.0 - o.beta2);
  eps = float(o.eps);
  step_size = float(lr / bias_correction1);
  bias_correction2_sqrt = std::sqrt(bias_correction2);
  decay_factor = float(1.0 - lr * o.weight_decay);
}

void adamw_update(const AdamWStep& s, bool decay, float* param, const float* grad, float* exp_avg,
                  float* exp_avg_sq, size_t n) {
  const float correction = float(s.bias_correction2_sqrt);
  const float decay_factor = decay ? s.decay_factor : 1.0f;
  // Element-wise with no carried dependence: the SIMD form computes each
  // element with the same IEEE operations (sqrt and / correctly rounded), so
  // the result is bit for bit the scalar loop's.
#pragma omp simd
  for (size_t i = 0; i < n; ++i) {
    const float g = grad[i];
    const float m = exp_avg[i] * s.beta1 + s.one_minus_beta1 * g;
    const float v = exp_avg_sq[i] * s.beta2 + s.one_minus_beta2 * (g * g);
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    const float denom = std::sqrt(v) / correction + s.eps;
    param[i] = param[i] * decay_factor - s.step_size * (m / denom);
  }
}

}  // namespace cmpi::parallel
