// CallSpec: what the Communicator's one dispatch (Communicator::dispatch,
// communicator.cpp) needs to know of a call to watch it, route it, let
// preset auto see it and account for it, whatever the operation, the
// element type or the memory. Each operation fills one in after its own
// checks (counts, peers, tags); the transport then runs the body.
#pragma once

#include <cstddef>
#include <cstdint>

#include "comm/element_type.h"
#include "comm/group_kind.h"

namespace cmpi::comm {

struct CallSpec {
  // Names the call to the watchdog and in errors ("allreduce", "device send").
  const char* operation = "";
  Op op = Op::kAllreduce;
  Role role = Role::kGradient;
  BufferKind buffers;
  Locality locality = Locality::kIntra;
  // The rank a point-to-point call waits for (named on a timeout); -1: the group.
  int peer = -1;
  // The bytes the policy is asked about: this rank's, or, with
  // agree_on_size (ranks may hold different sizes), the group's largest.
  size_t policy_bytes = 0;
  bool agree_on_size = false;
  // What CommStats charges as the call's raw bytes (the bandwidth-optimal
  // algorithm's, so that raw and wire bytes of both paths compare).
  uint64_t raw_bytes = 0;
  // Preset auto: this rank's own data to probe candidates on (float32 host
  // buffers only: its probes measure float data), the bytes the call
  // receives, and whether the call blocks until its transfer is done.
  const float* own = nullptr;
  size_t own_n = 0;
  uint64_t received_bytes = 0;
  bool blocking = true;

  bool on_device() const { return buffers.memory == MemoryKind::kDevice; }
  bool on_float_host() const { return !on_device() && buffers.element.is_float32(); }
  // Sets preset auto's sample where its probes can read it.
  void sample(const void* data, size_t n) {
    if (!on_float_host()) return;
    own = static_cast<const float*>(data);
    own_n = n;
  }
};

}  // namespace cmpi::comm
