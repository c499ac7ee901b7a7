#include "models/loss_scaler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace cmpi::models {
namespace {

// The checkpoint record: a tag, then the three values.
constexpr char kTag[8] = {'l', 's', 'c', 'a', 'l', 'e', '1', '\0'};
struct Record {
  char tag[8];
  double scale;
  int64_t finite_in_a_row;
  int64_t overflows;
};

}  // namespace

LossScaler::LossScaler(const LossScalerSettings& settings)
    : settings_(settings), scale_(settings.initial_scale) {
  if (!(settings.initial_scale >= 1) || !std::isfinite(settings.initial_scale))
    throw std::invalid_argument("training.loss_scale_initial must be a finite number >= 1, got " +
                                std::to_string(settings.initial_scale));
  if (settings.growth_interval < 1)
    throw std::invalid_argument("training.loss_scale_growth_interval must be >= 1, got " +
                                std::to_string(settings.growth_interval));
  if (!(settings.backoff > 0 && settings.backoff < 1))
    throw std::invalid_argument("training.loss_scale_backoff must lie in (0, 1), got " +
                                std::to_string(settings.backoff));
  if (!(settings.min_scale >= 1 && settings.min_scale <= settings.initial_scale))
    throw std::invalid_argument(
        "training.loss_scale_min must lie in [1, training.loss_scale_initial], got " +
        std::to_string(settings.min_scale));
}

void LossScaler::update(bool overflowed) {
  if (overflowed) {
    ++overflows_;
    finite_in_a_row_ = 0;
    scale_ = std::max(settings_.min_scale, scale_ * settings_.backoff);
    return;
  }
  if (++finite_in_a_row_ >= settings_.growth_interval) {
    finite_in_a_row_ = 0;
    scale_ *= 2;  // too large a scale overflows, and backs off again
  }
}

std::string LossScaler::save() const {
  Record record{};
  std::memcpy(record.tag, kTag, sizeof kTag);
  record.scale = scale_;
  record.finite_in_a_row = finite_in_a_row_;
  record.overflows = overflows_;
  return std::string(reinterpret_cast<const char*>(&record), sizeof record);
}

void LossScaler::load(const std::string& bytes) {
  Record record{};
  if (bytes.size() != sizeof record)
    throw std::runtime_error("loss scaler state: expected " + std::to_string(sizeof record) +
                             " bytes, got " + std::to_string(bytes.size()));
  std::memcpy(&record, bytes.data(), sizeof record);
  if (std::memcmp(record.tag, kTag, sizeof kTag) != 0 || !(record.scale >= 1) ||
      record.finite_in_a_row < 0 || record.overflows < 0)
    throw std::runtime_error("loss scaler state: not a saved loss scale");
  scale_ = record.scale;
  finite_in_a_row_ = record.finite_in_a_row;
  overflows_ = record.overflows;
}

}  // namespace cmpi::models
