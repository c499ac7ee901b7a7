#include "comm/algorithms/chunk_payload.h"

#include <string>

#include "comm/algorithms/codec_steps.h"
#include "comm/algorithms/progress.h"
#include "compress/byte_order.h"
#include "compress/splitmix64.h"

namespace cmpi::comm {
namespace {

constexpr size_t kStepSizeBytes = 4;

// Length of step j of `steps` over n floats: the last takes the remainder.
size_t step_length(size_t n, size_t steps, size_t j) {
  return j + 1 < steps ? kCodecStepElems : n - j * kCodecStepElems;
}

// Bytes of the step table: none for a single step.
size_t table_bytes(size_t steps) {
  return steps > 1 ? steps * kStepSizeBytes : 0;
}

}  // namespace

size_t chunk_payload_bound(const compress::Codec& codec, size_t elems) {
  const size_t steps = codec_step_count(elems);
  if (steps == 0) return 0;
  return table_bytes(steps) + (steps - 1) * codec.max_encoded_bytes(kCodecStepElems) +
         codec.max_encoded_bytes(step_length(elems, steps, steps - 1));
}

uint64_t step_feedback_key(uint64_t chunk_key, size_t steps, size_t j) {
  if (steps == 1) return chunk_key;
  return compress::splitmix64(chunk_key ^ compress::splitmix64(uint64_t(j) + 1));
}

size_t encode_chunk_payload(CompressedContext& ctx, Progress& progress, const float* in, size_t n,
                            uint8_t* out, size_t capacity, const uint64_t* feedback_key) {
  const size_t steps = codec_step_count(n);
  const bool feedback = ctx.feedback != nullptr && feedback_key != nullptr;
  size_t offset = table_bytes(steps);
  for (size_t j = 0; j < steps; ++j) {
    const float* step_in = in + j * kCodecStepElems;
    const size_t length = step_length(n, steps, j);
    uint8_t* step_out = out + offset;
    const size_t room = capacity - offset;
    double start = MPI_Wtime();
    const uint64_t raw_before = ctx.codec->nonfinite_raw_chunks();
    const size_t bytes = feedback ? ctx.feedback->encode(step_feedback_key(*feedback_key, steps, j),
                                                         step_in, length, step_out, room)
                                  : ctx.codec->encode(step_in, length, step_out, room);
    add_encode_seconds(ctx, MPI_Wtime() - start);
    // The feedback encoder codes through ctx.codec, so one counter covers both.
    if (ctx.counters)
      ctx.counters->nonfinite_raw_chunks += ctx.codec->nonfinite_raw_chunks() - raw_before;
    if (steps > 1) compress::store_le32(out + j * kStepSizeBytes, uint32_t(bytes));
    offset += bytes;
    progress.poll_if_due();
  }
  return offset;
}

void decode_chunk_payload(CompressedContext& ctx, Progress& progress, const uint8_t* in,
                          size_t size, float* out, size_t n) {
  const size_t steps = codec_step_count(n);
  if (steps == 1) {
    double start = MPI_Wtime();
    ctx.codec->decode(in, size, out, n);
    add_decode_seconds(ctx, MPI_Wtime() - start);
    progress.poll_if_due();
    return;
  }
  const size_t table = table_bytes(steps);
  if (size < table)
    throw compress::DecodeError("body", "payload of " + std::to_string(size) +
                                            " bytes cannot hold the step table of " +
                                            std::to_string(steps) + " steps");
  // Check the whole table first, so no step is decoded from a payload whose
  // sizes do not add up.
  size_t total = table;
  for (size_t j = 0; j < steps; ++j) total += compress::load_le32(in + j * kStepSizeBytes);
  if (total != size)
    throw compress::DecodeError("body", "step table adds up to " + std::to_string(total) +
                                            " bytes, the payload has " + std::to_string(size));
  size_t offset = table;
  for (size_t j = 0; j < steps; ++j) {
    const size_t bytes = compress::load_le32(in + j * kStepSizeBytes);
    double start = MPI_Wtime();
    ctx.codec->decode(in + offset, bytes, out + j * kCodecStepElems, step_length(n, steps, j));
    add_decode_seconds(ctx, MPI_Wtime() - start);
    offset += bytes;
    progress.poll_if_due();
  }
}

}  // namespace cmpi::comm
