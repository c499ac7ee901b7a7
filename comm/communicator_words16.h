// Communicator::Words16: how 16-bit words travel through a compressing
// route (internal to comm/communicator*.cpp; see communicator_words16.cpp
// for the carriages). The operations' one form (communicator.cpp,
// communicator_p2p.cpp) asks path() once the dispatch has found the route;
// a raw path takes the plain MPI path, any other the bodies below, which
// open the call's CallRecord themselves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "comm/call_accounting.h"
#include "comm/call_spec.h"
#include "comm/communicator.h"
#include "comm/word_staging.h"

namespace cmpi::comm {

class IncomingTransfer;
class OutgoingTransfer;

struct Communicator::Words16 {
  enum class Carriage { kRaw, kPaired, kWidened };
  struct Path {
    const Route* route = nullptr;  // the compressing route; nullptr when raw
    Carriage carriage = Carriage::kRaw;
    WordStaging staging;
  };

  // How the words of `call` travel on the route `found`; throws
  // std::invalid_argument for a codec with no 16-bit path (block_sparse).
  static Path path(const Communicator& c, const Route* found, const CallSpec& call);

  static void allreduce(Communicator& c, const Path& p, CallRecord& record, uint16_t* data,
                        size_t n, uint64_t buffer_key);
  static void reduce_scatter(Communicator& c, const Path& p, CallRecord& record, const uint16_t* in,
                             uint16_t* out, const std::vector<size_t>& counts, uint64_t buffer_key);
  static void allgather(Communicator& c, const Path& p, CallRecord& record, const uint16_t* in,
                        uint16_t* out, const std::vector<size_t>& counts, uint64_t buffer_key);
  // A blocking send or receive finishes its transfer before it returns
  // (inside the call's own watched scope).
  static Request isend(Communicator& c, const Path& p, CallRecord& record, const uint16_t* data,
                       size_t n, int dest, int tag, uint64_t buffer_key, bool blocking);
  static Request irecv(Communicator& c, const Path& p, uint16_t* data, size_t n, int source,
                       int tag, bool blocking);

 private:
  static CompressedContext context(Communicator& c, const Path& p, Op op, MPI_Comm comm, int tag,
                                   uint64_t buffer_key);
  static size_t piece_elems(const Path& p);
  static void send_chunks(Communicator& c, const Path& p, OutgoingTransfer& out,
                          const uint16_t* data, size_t n, int dest, uint64_t buffer_key,
                          uint64_t bytes);
  static void receive_chunk(const WordStaging& staging, IncomingTransfer& in, size_t k,
                            std::vector<float>& scratch, uint16_t* data, size_t n);
  static void check_not_self(const Communicator& c, int peer, const char* operation);
};

}  // namespace cmpi::comm
