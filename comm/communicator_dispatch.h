// Communicator::dispatch: the one path of every Communicator call (internal
// to comm/communicator*.cpp). Whatever the operation, the element type or
// the memory, a call is
//   1. watched: a deadline on the whole call (comm/watchdog.h), naming the
//      operation and the peer it waits for;
//   2. routed: the policy is asked about (op, role, bytes, locality, word
//      type), with the group's largest size where ranks may hold different
//      ones, so every rank takes the same route;
//   3. adapted: preset auto probes its candidates on the caller's float data
//      when due and records what the call cost (host calls; a device call
//      runs the candidate chosen so far but does not feed the model, as
//      measuring would read device data back);
//   4. moved: the body, the transport's plain or compressed form of the
//      operation, opens the call's accounting (CallRecord) for the path it
//      takes; the record closes when the body returns, before the adaptive
//      hook records, so that it sees everything the call charged.
#pragma once

#include <utility>

#include "comm/adaptive_call.h"
#include "comm/call_accounting.h"
#include "comm/communicator.h"
#include "comm/watchdog.h"

namespace cmpi::comm {

template <class Body>
auto Communicator::dispatch(const CallSpec& call, Body&& body) {
  WatchedCall watched(call.operation, comm_, call.peer);
  const size_t policy_bytes =
      call.agree_on_size ? agreed_bytes(call.op, call.role, call.policy_bytes) : call.policy_bytes;
  const Route* found =
      find_route(call.op, call.role, policy_bytes, call.locality, call.buffers.element.word);
  AdaptiveCall adaptive(call.on_device() ? nullptr : adaptive_.get(), found, call.op, call.role,
                        call.locality, stats_.at(call.op), call.own, call.own_n,
                        call.received_bytes, call.blocking);
  CallRecord record(stats_.at(call.op), call.locality, call.raw_bytes);
  return std::forward<Body>(body)(found, record);
}

}  // namespace cmpi::comm
