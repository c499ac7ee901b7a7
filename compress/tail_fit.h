// Tail fits for statistical threshold estimation (SIDCo, sidco_codec.h):
// given the mean and variance of non-negative samples y (magnitudes, or the
// excesses of magnitudes over a previous threshold), fit a distribution by
// the method of moments and return the t with P(Y > t) = tail under it.
//   exponential        scale mu:             t = mu * ln(1/tail)
//   generalized Pareto shape xi, scale beta: xi = (1 - mu^2/var) / 2,
//                      beta = mu (1 + mu^2/var) / 2,
//                      t = beta/xi * (tail^-xi - 1)   (exponential as xi -> 0)
//   gamma              shape k = mu^2/var, scale theta = var/mu:
//                      t = theta * Q^-1(k, tail), Q the regularized upper
//                      incomplete gamma function, inverted numerically.
// The exponential needs the mean only; the other two also capture how heavy
// the tail is (generalized Pareto is the limit law of excesses over a high
// threshold, which is why multi-stage SIDCo refines with it).
#pragma once

#include <string>

namespace cmpi::compress {

enum class TailFit { kExponential, kGeneralizedPareto, kGamma };

// "exponential" | "gpareto" | "gamma"; throws std::invalid_argument otherwise.
TailFit parse_tail_fit(const std::string& name);
const char* tail_fit_name(TailFit fit);

// The t >= 0 with P(Y > t) = tail (0 < tail <= 1) for the distribution of
// kind `fit` with this mean and variance. Degenerate moments (mean <= 0, or
// variance <= 0 where the fit needs it) give 0: the samples are all equal.
double tail_quantile(TailFit fit, double mean, double variance, double tail);

// Q(a, x) = Gamma(a, x) / Gamma(a), a > 0, x >= 0 (exposed for tests).
double regularized_upper_gamma(double a, double x);

}  // namespace cmpi::compress
