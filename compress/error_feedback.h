// ErrorFeedback: wraps a lossy codec so that what compression loses is not
// lost for good. For each buffer key it keeps a residual r; encoding x sends
// C(x + r) and keeps r' = (x + r) - D(C(x + r)). Over many steps the sum of
// what was sent tracks the sum of the inputs (the error is fed back instead
// of accumulating), which keeps biased codecs (top-k, sign, low-rate zfp)
// convergent for gradients. Residuals are exportable so checkpoints can hold
// them.
//
// Several wrappers may share one residual store (the adaptive policy's
// candidates for one kind of traffic): what one codec left unsent is then
// sent by whichever codec encodes that buffer next.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "compress/codec.h"

namespace cmpi::compress {

class ErrorFeedback {
 public:
  using Residuals = std::map<uint64_t, std::vector<float>>;

  // `shared`: a residual store other wrappers use too (nullptr: its own).
  explicit ErrorFeedback(std::unique_ptr<Codec> inner, std::shared_ptr<Residuals> shared = nullptr);

  Codec& codec() { return *inner_; }
  const Codec& codec() const { return *inner_; }

  // Encodes in[0..n) plus the residual kept for `key` (zero the first time)
  // and updates that residual. A key seen before with another n is an error
  // (std::invalid_argument naming the key and both lengths).
  size_t encode(uint64_t key, const float* in, size_t n, uint8_t* out, size_t capacity);

  // Payloads decode with the inner codec: codec().decode(...).

  const Residuals& residuals() const { return *residuals_; }
  void import_residuals(Residuals residuals);
  void clear() { residuals_->clear(); }

 private:
  std::unique_ptr<Codec> inner_;
  std::shared_ptr<Residuals> residuals_;
  std::vector<float> work_;     // x + r, reused between calls
  std::vector<float> decoded_;  // the receiver's view of work_, reused
};

}  // namespace cmpi::compress
