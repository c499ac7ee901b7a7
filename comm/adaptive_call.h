// AdaptiveCall: the Communicator's per-call hook for preset auto.
#pragma once

#include "comm/adaptive_policy.h"
#include "comm/comm_stats.h"
#include "comm/policy.h"

namespace cmpi::comm {

// Charges one call through an adaptive candidate to its slot
// (AdaptivePolicy::record) from the counters' growth over the call, and
// probes the slot's candidates on the caller's data first when due.
// Constructed before the call's PlainCall/CompressedCall, so that it ends
// after them and sees everything they charged.
class AdaptiveCall {
 public:
  AdaptiveCall(AdaptivePolicy* adaptive, const PolicySlice::Route* route, Op op, Role role,
               Locality locality, const OpCounters& counters, const float* own, size_t own_n,
               uint64_t received_bytes = 0, bool blocking = true)
      : adaptive_(adaptive != nullptr && route != nullptr && route->auto_rule >= 0 ? adaptive
                                                                                   : nullptr),
        route_(route),
        op_(op),
        role_(role),
        locality_(locality),
        counters_(counters),
        before_(adaptive_ != nullptr ? counters : OpCounters{}),
        received_bytes_(received_bytes),
        blocking_(blocking) {
    if (adaptive_ != nullptr) adaptive_->probe_if_due(*route, op, role, locality, own, own_n);
  }
  ~AdaptiveCall() {
    if (adaptive_ == nullptr) return;
    AutoCallSample sample;
    sample.raw_bytes = counters_.raw_bytes - before_.raw_bytes;
    sample.wire_bytes = counters_.wire_bytes - before_.wire_bytes;
    sample.received_bytes = received_bytes_;
    sample.seconds = counters_.seconds - before_.seconds;
    sample.codec_seconds = (counters_.encode_seconds - before_.encode_seconds) +
                           (counters_.decode_seconds - before_.decode_seconds);
    sample.blocking = blocking_;
    adaptive_->record(*route_, op_, role_, locality_, sample);
  }
  AdaptiveCall(const AdaptiveCall&) = delete;
  AdaptiveCall& operator=(const AdaptiveCall&) = delete;

 private:
  AdaptivePolicy* adaptive_;
  const PolicySlice::Route* route_;
  Op op_;
  Role role_;
  Locality locality_;
  const OpCounters& counters_;
  OpCounters before_;
  uint64_t received_bytes_;
  bool blocking_;
};

}  // namespace cmpi::comm
