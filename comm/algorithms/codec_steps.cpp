#include "comm/algorithms/codec_steps.h"

#include <climits>
#include <stdexcept>

#include "comm/algorithms/chunk_payload.h"
#include "compress/splitmix64.h"

namespace cmpi::comm {

using compress::splitmix64;

uint64_t feedback_key(uint64_t buffer_key, FeedbackSite site, uint64_t part, uint64_t chunk) {
  uint64_t h = splitmix64(buffer_key);
  h = splitmix64(h ^ static_cast<uint64_t>(site));
  h = splitmix64(h ^ part);
  return splitmix64(h ^ chunk);
}

std::string describe_call(const CompressedContext& ctx, Op op) {
  return std::string("compressed ") + call_name(op) + " in group " + to_string(ctx.group);
}

void check_context(const CompressedContext& ctx, Op op) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument(describe_call(ctx, op) + ": " + why);
  };
  if (ctx.comm == MPI_COMM_NULL) fail("context has no communicator");
  if (ctx.codec == nullptr) fail("context has no codec");
  int size = 0, rank = 0;
  MPI_Comm_size(ctx.comm, &size);
  MPI_Comm_rank(ctx.comm, &rank);
  if (size != ctx.size || rank != ctx.rank)
    fail("context says rank " + std::to_string(ctx.rank) + " of " + std::to_string(ctx.size) +
         ", communicator says rank " + std::to_string(rank) + " of " + std::to_string(size));
  if (ctx.chunk_elems == 0) fail("chunk_elems is 0");
  if (ctx.chunk_elems > size_t(UINT32_MAX) ||
      chunk_message_bound(ctx, ctx.chunk_elems) > size_t(INT_MAX))
    fail("chunk_elems " + std::to_string(ctx.chunk_elems) +
         " gives chunks larger than one MPI message can hold (INT_MAX bytes)");
  if (ctx.tag < 0) fail("tag " + std::to_string(ctx.tag) + " is negative");
  if (ctx.feedback != nullptr) {
    const compress::Codec& inner = ctx.feedback->codec();
    if (inner.id() != ctx.codec->id() ||
        inner.max_encoded_bytes(ctx.chunk_elems) != ctx.codec->max_encoded_bytes(ctx.chunk_elems))
      fail("error feedback wraps " + inner.spec().to_string() + " but the codec is " +
           ctx.codec->spec().to_string());
  }
}

void check_counts(const CompressedContext& ctx, Op op, size_t counts_size, const char* name) {
  if (counts_size != size_t(ctx.size))
    throw std::invalid_argument(describe_call(ctx, op) + ": " + name + " has " +
                                std::to_string(counts_size) + " entries for " +
                                std::to_string(ctx.size) + " ranks");
}

size_t chunk_message_bound(const CompressedContext& ctx, size_t elems) {
  return kChunkFrameBytes + chunk_payload_bound(*ctx.codec, elems);
}

void add_encode_seconds(CompressedContext& ctx, double seconds) {
  if (ctx.counters) ctx.counters->encode_seconds += seconds;
}
void add_decode_seconds(CompressedContext& ctx, double seconds) {
  if (ctx.counters) ctx.counters->decode_seconds += seconds;
}
void add_wire_seconds(CompressedContext& ctx, double seconds) {
  if (ctx.counters) ctx.counters->wire_seconds += seconds;
}
void add_wire_bytes(CompressedContext& ctx, size_t bytes) {
  if (ctx.counters) ctx.counters->wire_bytes += bytes;
}

}  // namespace cmpi::comm
