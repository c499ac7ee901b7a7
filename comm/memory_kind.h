// MemoryKind: where the buffers of a Communicator call live. kHost: host
// memory, the plain and compressed CPU paths; kDevice: memory of the device
// attached to the communicator (Communicator::attach_device), routed to the
// staged device collectives (comm/device/). The tag is explicit because a
// pointer does not say which memory it points into.
#pragma once

namespace cmpi::comm {

enum class MemoryKind { kHost, kDevice };

inline const char* to_string(MemoryKind memory) {
  return memory == MemoryKind::kHost ? "host" : "device";
}

}  // namespace cmpi::comm
