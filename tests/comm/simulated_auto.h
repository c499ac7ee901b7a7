// What preset auto's unit tests share (adaptive_trial_test.cpp,
// adaptive_state_test.cpp, adaptive_convergence_mpi_test.cpp): one adaptive
// rule on dp gradient allreduces with three candidates -- raw, zfp rate 8
// with error feedback, and a third that its error does not vouch for, so
// that auto may take it only as a trial -- and a simulated link on which a
// call's time is its wire bytes over 10 MB/s, so that the cheapest route
// follows from the bytes alone, whatever the machine's speed.
#pragma once

#include <cstdint>
#include <optional>

#include "comm/adaptive_policy.h"

namespace cmpi::comm::simulated_auto {

inline constexpr double kLinkBytesPerSecond = 10e6;
inline constexpr uint64_t kCallBytes = uint64_t(64) << 20;  // what one simulated call moves raw
// The candidates' indices in the rule.
enum Candidate : int { kRaw, kZfp8Feedback, kThird };

// raw, zfp rate 8 + error feedback, then `third` (none: two candidates).
inline PolicyRule gradient_rule(const std::optional<compress::CodecSpec>& third) {
  PolicyRule rule;
  rule.match.groups = {GroupKind::kDp};
  rule.match.ops = {Op::kAllreduce};
  rule.match.roles = {Role::kGradient};
  rule.candidates = {
      AutoCandidate{std::nullopt, false},
      AutoCandidate{compress::CodecSpec("zfp", {{"mode", "rate"}, {"rate", "8"}}), true}};
  if (third) rule.candidates.push_back(AutoCandidate{*third, false});
  rule.origin = "test: gradients";
  return rule;
}

// The policy of that one rule: every size compressed, one probe (no timing
// after it), an error budget that lets the third candidate in (the loss
// trend must judge it), trials of `trend_window` steps.
inline PolicyConfig gradient_policy(const std::optional<compress::CodecSpec>& third,
                                    int64_t trend_window) {
  PolicyConfig config;
  config.min_bytes = 0;
  config.rules = {gradient_rule(third)};
  config.auto_settings.max_rel_error = 10;
  config.auto_settings.probe_every = 0;
  config.auto_settings.trend_window = trend_window;
  return config;
}

// One simulated call of kCallBytes through a route that puts
// `wire_fraction` of them on the wire.
inline AutoCallSample simulated_call(double wire_fraction) {
  AutoCallSample sample;
  sample.raw_bytes = kCallBytes;
  sample.wire_bytes = uint64_t(double(kCallBytes) * wire_fraction);
  sample.seconds = double(sample.wire_bytes) / kLinkBytesPerSecond;
  return sample;
}

}  // namespace cmpi::comm::simulated_auto
