// MpcCodec: the chunk table and the threading around mpc_chunk.h.
//
// Encoding in parallel, chunk c is first written at its raw offset (no chunk
// is larger than raw, so the regions cannot overlap), then the chunks are
// moved down to close the gaps. One thread writes each chunk directly in
// place. Both produce the same bytes. Decoding validates the whole chunk table
// before any chunk is decoded; a chunk's DecodeError inside the parallel loop
// is carried out of it, the lowest-numbered failing chunk reported.
#include "compress/mpc_codec.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "compress/mpc_chunk.h"

namespace cmpi::compress {
namespace {

constexpr int64_t kMaxChunkFloats = int64_t{1} << 24;
constexpr int64_t kMaxThreads = 1024;
// Revision 2: chunks carry their plan (mpc_chunk_plan.h). Revision 1 (plain
// MPC, bitmaps before all words) wrote 0 here.
constexpr uint32_t kChunkFormatRevision = 2;

[[noreturn]] void bad_param(const CodecSpec& spec, const std::string& key, const std::string& why) {
  throw CodecError("codec " + spec.to_string() + ": parameter '" + key + "' " + why);
}

SimdLevel simd_level_from(const CodecSpec& spec) {
  const std::string name = spec.get_string("simd", "auto");
  if (name == "auto") return best_simd_level();
  for (SimdLevel level : {SimdLevel::kScalar, SimdLevel::kSsse3, SimdLevel::kAvx2}) {
    if (name != simd_level_name(level)) continue;
    if (!simd_level_supported(level))
      bad_param(spec, "simd", "is " + name + ", which this CPU does not support");
    return level;
  }
  bad_param(spec, "simd", "must be auto, scalar, ssse3 or avx2, got '" + name + "'");
}

}  // namespace

MpcCodec::MpcCodec(const CodecSpec& spec) : Codec(spec) {
  spec.require_only({"dim", "chunk", "threads", "simd"});
  int64_t dim = 0;  // auto
  if (spec.get_string("dim", "1") != "auto") {
    dim = spec.get_int("dim", 1);
    if (dim < 1 || dim > 32)
      bad_param(spec, "dim", "must be auto or in 1..32, got " + std::to_string(dim));
  }
  const int64_t chunk = spec.get_int("chunk", 65536);
  if (chunk < 32 || chunk > kMaxChunkFloats || chunk % 32 != 0)
    bad_param(spec, "chunk",
              "must be a multiple of 32 in 32.." + std::to_string(kMaxChunkFloats) + ", got " +
                  std::to_string(chunk));
  const int64_t threads = spec.get_int("threads", 1);
  if (threads < 0 || threads > kMaxThreads)
    bad_param(spec, "threads",
              "must be in 0.." + std::to_string(kMaxThreads) + " (0 = all cores), got " +
                  std::to_string(threads));
  dim_ = static_cast<unsigned>(dim);
  chunk_ = static_cast<size_t>(chunk);
  threads_ = static_cast<int>(threads);
  level_ = simd_level_from(spec);
}

int MpcCodec::threads() const {
  return threads_ == 0 ? omp_get_max_threads() : threads_;
}

size_t MpcCodec::chunk_words(size_t n, size_t c) const {
  return std::min(chunk_, n - c * chunk_);
}

size_t MpcCodec::max_body_bytes(size_t n) const {
  return 4 * chunk_count(n) + 4 * n;  // chunk table + chunks no larger than raw
}

std::array<uint32_t, 4> MpcCodec::header_params() const {
  return {dim_, static_cast<uint32_t>(chunk_), kChunkFormatRevision, 0};
}

size_t MpcCodec::encode_body(const float* in, size_t n, uint8_t* out, size_t, uint16_t&) {
  const size_t nchunks = chunk_count(n);
  uint8_t* const chunks = out + 4 * nchunks;
  std::vector<uint32_t> sizes(nchunks);
  const int nthreads = static_cast<int>(std::min<size_t>(threads(), nchunks));
  size_t end = 0;
  if (nthreads <= 1) {
    for (size_t c = 0; c < nchunks; ++c) {
      sizes[c] = static_cast<uint32_t>(
          mpc_encode_chunk(in + c * chunk_, chunk_words(n, c), dim_, chunks + end, level_));
      end += sizes[c];
    }
  } else {
    const auto count = static_cast<int64_t>(nchunks);
#pragma omp parallel for num_threads(nthreads) schedule(static)
    for (int64_t c = 0; c < count; ++c) {
      const size_t offset = 4 * static_cast<size_t>(c) * chunk_;
      sizes[c] = static_cast<uint32_t>(mpc_encode_chunk(
          in + c * chunk_, chunk_words(n, static_cast<size_t>(c)), dim_, chunks + offset, level_));
    }
    for (size_t c = 0; c < nchunks; ++c) {
      const size_t offset = 4 * c * chunk_;
      if (offset != end) std::memmove(chunks + end, chunks + offset, sizes[c]);
      end += sizes[c];
    }
  }
  if (nchunks) std::memcpy(out, sizes.data(), 4 * nchunks);
  return 4 * nchunks + end;
}

void MpcCodec::decode_body(const uint8_t* in, size_t size, float* out, size_t n,
                           uint16_t flags) const {
  if (flags != 0)
    throw DecodeError("flags", "mpc payload has flags " + std::to_string(flags) + ", expected 0");
  const size_t nchunks = chunk_count(n);
  if (size / 4 < nchunks)
    throw DecodeError("body", "mpc body of " + std::to_string(size) +
                                  " bytes is shorter than its chunk table (" +
                                  std::to_string(nchunks) + " chunks, 4 bytes each)");
  std::vector<uint32_t> sizes(nchunks);
  if (nchunks) std::memcpy(sizes.data(), in, 4 * nchunks);
  std::vector<size_t> offsets(nchunks + 1);
  offsets[0] = 4 * nchunks;
  for (size_t c = 0; c < nchunks; ++c) {
    const size_t words = chunk_words(n, c);
    if (sizes[c] > mpc_max_chunk_bytes(words))
      throw DecodeError("body", "mpc chunk table: chunk " + std::to_string(c) + " claims " +
                                    std::to_string(sizes[c]) + " bytes, more than its " +
                                    std::to_string(words) + " raw floats");
    offsets[c + 1] = offsets[c] + sizes[c];
  }
  if (offsets[nchunks] != size)
    throw DecodeError("body", "mpc chunk table accounts for " + std::to_string(offsets[nchunks]) +
                                  " bytes, body holds " + std::to_string(size));

  const int nthreads = static_cast<int>(std::min<size_t>(threads(), nchunks));
  if (nthreads <= 1) {
    for (size_t c = 0; c < nchunks; ++c)
      mpc_decode_chunk(in + offsets[c], sizes[c], out + c * chunk_, chunk_words(n, c), c, level_);
    return;
  }
  std::vector<std::exception_ptr> errors(nchunks);
  const auto count = static_cast<int64_t>(nchunks);
#pragma omp parallel for num_threads(nthreads) schedule(static)
  for (int64_t c = 0; c < count; ++c) {
    try {
      mpc_decode_chunk(in + offsets[c], sizes[c], out + c * chunk_,
                       chunk_words(n, static_cast<size_t>(c)), static_cast<size_t>(c), level_);
    } catch (...) {
      errors[c] = std::current_exception();
    }
  }
  for (const auto& error : errors)
    if (error) std::rethrow_exception(error);
}

}  // namespace cmpi::compress
