// CompressedContext: everything a compressed collective needs besides its
// buffers: the group, the codec (with optional error feedback), the chunk
// size that sets the pipelining granularity, a tag for this call, and the
// counters it charges wire bytes and encode/decode/wire seconds to.
// The Communicator builds one per call from the policy's Plan.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

#include "comm/comm_stats.h"
#include "comm/group_kind.h"
#include "compress/codec.h"
#include "compress/error_feedback.h"

namespace cmpi::comm {

struct CompressedContext {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  GroupKind group = GroupKind::kWorld;
  compress::Codec* codec = nullptr;             // encodes and decodes
  compress::ErrorFeedback* feedback = nullptr;  // non-null: encode own data through it
  uint64_t buffer_key = 0;                      // error-feedback key of this buffer
  size_t chunk_elems = 1 << 18;                 // floats per pipelined chunk
  int tag = 0;                                  // MPI tag reserved for this call
  OpCounters* counters = nullptr;               // wire bytes, encode/decode/wire seconds
};

}  // namespace cmpi::comm
