// The payload of a chunk message (behind its frame, chunk_frame.h): the
// chunk's floats cut into codec steps of kCodecStepElems (the last one takes
// the remainder too, so it holds kCodecStepElems to 2·kCodecStepElems - 1;
// a chunk shorter than one step is one step), each encoded by a codec call
// of its own, so that the rank polls
// MPI progress between two steps (progress.h) instead of leaving its
// transfers stalled for a whole chunk's codec work. With
// m = max(1, floor(elements / kCodecStepElems)) steps (0 when empty):
//
//   m = 0 (empty chunk)   no payload at all
//   m = 1                 the step's codec payload (payload.h), nothing else
//   m > 1                 offset  size         field
//                         0       4·m          step_bytes[m]: u32 each, the
//                                              size of step j's codec payload
//                         4·m     sum of them  the m codec payloads back to back
//
// (a chunk of one step keeps the layout chunks had before they were cut into
// steps, so small messages pay no table).
// Every step payload is self-describing (codec, parameters, element count),
// so the receiver checks each against its own view as it decodes it.
//
// What the steps change: lossless codecs, and codecs that code fixed blocks
// independently (zfp: blocks of 4 floats; sign with a bucket that divides
// kCodecStepElems) give the same decoded values as one call over the whole
// chunk. Codecs that choose over the whole call (top-k's and random-k's
// k entries, sign's and qsgd's scales with bucket 0) choose per step. Error
// feedback keeps one residual per step (step_feedback_key).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "comm/algorithms/compressed_context.h"

namespace cmpi::comm {

class Progress;

// Floats per codec call: at libzfp's ~100 MB/s a step takes ~0.6 ms, short
// against a 64 KiB rendezvous message's 0.5 ms on a 1 Gbit/s link, and the
// codecs' per-call cost (a 48-byte header, setup) stays below 1%.
constexpr size_t kCodecStepElems = size_t(1) << 14;

// Steps of a chunk of `elems` floats. No step is shorter than
// kCodecStepElems unless the whole chunk is: a short tail step would code
// differently (zfp stores a step raw when coding it saves nothing).
inline size_t codec_step_count(size_t elems) {
  return elems == 0 ? 0 : std::max<size_t>(1, elems / kCodecStepElems);
}

// Largest payload of a chunk of `elems` floats (0 when elems is 0).
size_t chunk_payload_bound(const compress::Codec& codec, size_t elems);

// Residual key of step j of a chunk whose feedback key is chunk_key: the
// chunk's own key when it has one step, so chunks of up to kCodecStepElems
// keep the keys (and residuals) they had before chunks were cut into steps.
uint64_t step_feedback_key(uint64_t chunk_key, size_t steps, size_t j);

// Encodes in[0..n) into out (capacity >= chunk_payload_bound(n)), polling
// `progress` between steps; through ctx.feedback with per-step keys derived
// from *feedback_key when both are non-null. Returns the payload's size.
// Charges encode seconds (the codec calls only).
size_t encode_chunk_payload(CompressedContext& ctx, Progress& progress, const float* in, size_t n,
                            uint8_t* out, size_t capacity, const uint64_t* feedback_key);

// Decodes a payload of `size` bytes into out[0..n), polling `progress`
// between steps. Throws compress::DecodeError (field "body" for a step table
// that does not match the payload, else the codec's field) on anything
// inconsistent; reads nothing outside in[0..size). Charges decode seconds.
void decode_chunk_payload(CompressedContext& ctx, Progress& progress, const uint8_t* in,
                          size_t size, float* out, size_t n);

}  // namespace cmpi::comm
