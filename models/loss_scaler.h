// LossScaler: fp16's dynamic loss scaling (Micikevicius et al., "Mixed
// Precision Training"; the scheme of GPT-NeoX-20B's fp16 run). Backward
// starts from loss · scale so that small gradients stay above half's
// smallest normal number; the optimizer divides the float32 gradients by
// the scale before it clips and applies them. A step whose gradients
// overflowed (the optimizer's global norm is non-finite, so it skipped the
// update on every rank) multiplies the scale by `backoff`, never below
// `min_scale`; `growth_interval` finite steps in a row double it.
//
// Every rank holds the same scaler and feeds it the same outcomes (the skip
// rests on the global norm), so the scales agree without communication. Its
// state (scale, finite steps since the last change) goes into checkpoints as
// bytes. Torch-free.
#pragma once

#include <cstdint>
#include <string>

namespace cmpi::models {

struct LossScalerSettings {
  double initial_scale = 4096;  // 2^12
  int64_t growth_interval = 1000;
  double backoff = 0.5;  // in (0, 1)
  double min_scale = 1;  // in [1, initial_scale]
};

class LossScaler {
 public:
  // Throws std::invalid_argument naming the training.* key of a bad setting.
  explicit LossScaler(const LossScalerSettings& settings);

  double scale() const { return scale_; }
  // Whether an overflow at the current scale can be absorbed (the scale can
  // still back off): false at min_scale.
  bool can_back_off() const { return scale_ > settings_.min_scale; }
  // After a step ran with scale(): `overflowed` when its update was skipped.
  void update(bool overflowed);
  int64_t overflows() const { return overflows_; }

  // Checkpoint bytes; load throws std::runtime_error for bytes that are not
  // a saved scaler state.
  std::string save() const;
  void load(const std::string& bytes);

 private:
  LossScalerSettings settings_;
  double scale_;
  int64_t finite_in_a_row_ = 0;
  int64_t overflows_ = 0;
};

}  // namespace cmpi::models
