// Works as follows for one encode(key, x): w = x + r_key is formed in a
// scratch buffer, the inner codec encodes w, the payload is decoded again
// (the receiver's view) and r_key becomes w - decoded. The residual is only
// replaced once the encode has succeeded, so a refused input (e.g. NaN into
// qsgd) leaves it as it was. A residual element that comes out non-finite
// (an infinity sent by topk leaves inf - inf) is reset to 0: one overflowed
// step must not poison every later step of that buffer.
#include "compress/error_feedback.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace cmpi::compress {

ErrorFeedback::ErrorFeedback(std::unique_ptr<Codec> inner, std::shared_ptr<Residuals> shared)
    : inner_(std::move(inner)),
      residuals_(shared ? std::move(shared) : std::make_shared<Residuals>()) {
  if (!inner_) throw std::invalid_argument("ErrorFeedback: null codec");
}

size_t ErrorFeedback::encode(uint64_t key, const float* in, size_t n, uint8_t* out,
                             size_t capacity) {
  if (in == nullptr && n != 0)
    throw std::invalid_argument("ErrorFeedback: null input for key " + std::to_string(key));
  auto found = residuals_->find(key);
  if (found != residuals_->end() && found->second.size() != n)
    throw std::invalid_argument("ErrorFeedback: key " + std::to_string(key) +
                                " holds a residual of " + std::to_string(found->second.size()) +
                                " values, encode was given " + std::to_string(n));
  work_.resize(n);
  if (found == residuals_->end()) {
    for (size_t i = 0; i < n; ++i) work_[i] = in[i];
  } else {
    const float* r = found->second.data();
    for (size_t i = 0; i < n; ++i) work_[i] = in[i] + r[i];
  }
  const size_t size = inner_->encode(work_.data(), n, out, capacity);

  decoded_.resize(n);
  inner_->decode(out, size, decoded_.data(), n);
  std::vector<float>& r = found != residuals_->end() ? found->second : (*residuals_)[key];
  r.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const float left = work_[i] - decoded_[i];
    r[i] = std::isfinite(left) ? left : 0.f;
  }
  return size;
}

void ErrorFeedback::import_residuals(Residuals residuals) {
  *residuals_ = std::move(residuals);
}

}  // namespace cmpi::compress
