// zfp codec, chunked. How it works:
//
// encode: the array is cut into chunks of `chunk` floats. In parallel, each
// chunk is scanned for NaN/Inf (such a chunk is stored raw, or encode fails,
// per `nonfinite`), otherwise compressed by libzfp into a per-thread scratch
// buffer and copied into the chunk's slot in the output, or, in mode rate
// with impl native, coded by zfp_fixed_rate straight into the slot (same
// bytes); a slot is the chunk's raw size, which is enough because a chunk
// whose zfp stream would not be smaller than raw is stored raw. The slots
// are then compacted front to back behind the chunk table (one memmove pass
// over the compressed bytes).
//
// decode: the whole chunk table is validated first (sizes that add up to the
// body, raw chunks of exactly 4 bytes per float, zfp chunks of whole libzfp words,
// smaller than raw, and of the exact size a fixed-rate stream must have).
// Then, in parallel, each zfp chunk is decoded: by zfp_fixed_rate in place
// (impl native; it reads exactly the fixed-rate size the table was checked
// to hold), or through libzfp: the chunk is copied into a per-thread scratch
// buffer that is large enough for the most bits libzfp can read for that
// many blocks whatever the bytes say (libzfp's bit reader does not check
// for the end of its buffer), decoded, and rejected unless libzfp consumed
// exactly the chunk's bytes. So no byte string makes libzfp read outside
// memory we own, and a stream that does not end where the table says is an
// error rather than silently wrong floats.
#include "compress/zfp_codec.h"

#include <omp.h>
#include <zfp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "compress/byte_order.h"
#include "compress/nonfinite.h"
#include "compress/zfp_fixed_rate.h"

namespace cmpi::compress {
namespace {

constexpr size_t kMaxChunkFloats = size_t{1} << 26;
constexpr int kMaxThreads = 1024;
constexpr uint32_t kRawChunkBit = 0x80000000u;
constexpr uint32_t kChunkSizeMask = 0x7fffffffu;

// Most bits libzfp reads for one 1-D float block of 4 values, whatever the
// stream holds: 1 (block flag) + 8 (exponent) + 5 (reversible precision) +
// 4 * 32 bit planes + 3 (group tests before all 4 values are significant)
// = 145, rounded up. Fixed-rate blocks are at most 4 * 32 = 128 bits.
constexpr size_t kMaxBitsPerBlock = 160;
// Scratch buffers are arrays of 64-bit units, aligned for any libzfp word.
constexpr size_t kScratchUnit = sizeof(uint64_t);

// libzfp's bit-stream word (a build option of the library: Debian's uses
// bytes, upstream's default 64-bit words); streams are whole words.
size_t zfp_word_bytes() {
  return stream_alignment() / 8;
}

size_t blocks_of(size_t floats) {
  return (floats + 3) / 4;
}

// Bytes libzfp may touch when reading or writing `floats` values, plus two
// words of slack for the bit reader's look-ahead.
size_t stream_bound_bytes(size_t floats) {
  const size_t units = (blocks_of(floats) * kMaxBitsPerBlock + 63) / 64;
  return (units + 2) * kScratchUnit;
}

[[noreturn]] void bad_param(const std::string& key, const std::string& why) {
  throw CodecError("codec 'zfp': parameter '" + key + "' " + why);
}

// Split of n floats into chunks of `chunk` (the last one shorter).
struct ChunkLayout {
  size_t n;
  size_t chunk;
  size_t count() const { return n == 0 ? 0 : (n - 1) / chunk + 1; }
  size_t start(size_t k) const { return k * chunk; }
  size_t length(size_t k) const { return std::min(chunk, n - k * chunk); }
  size_t table_bytes() const { return 4 * count(); }
};

// One thread's libzfp objects over its own scratch buffer. Construction does
// not throw (it runs inside a parallel region); ok() says whether libzfp
// could allocate.
class ZfpWorker {
 public:
  ZfpWorker(uint64_t mode_word, std::vector<uint64_t>& scratch)
      : scratch_(scratch),
        zfp_(zfp_stream_open(nullptr)),
        bits_(stream_open(scratch.data(), scratch.size() * kScratchUnit)),
        field_(zfp_field_alloc()) {
    if (!ok()) return;
    zfp_stream_set_mode(zfp_, mode_word);
    zfp_stream_set_bit_stream(zfp_, bits_);
    zfp_field_set_type(field_, zfp_type_float);
  }
  ~ZfpWorker() {
    if (field_) zfp_field_free(field_);
    if (zfp_) zfp_stream_close(zfp_);
    if (bits_) stream_close(bits_);
  }
  ZfpWorker(const ZfpWorker&) = delete;
  ZfpWorker& operator=(const ZfpWorker&) = delete;

  bool ok() const { return zfp_ && bits_ && field_; }
  uint8_t* scratch_bytes() { return reinterpret_cast<uint8_t*>(scratch_.data()); }
  size_t scratch_capacity() const { return scratch_.size() * kScratchUnit; }

  // Compresses in[0..n) into the scratch buffer; returns the stream's bytes
  // (0 if libzfp failed).
  size_t compress(const float* in, size_t n) {
    zfp_field_set_pointer(field_, const_cast<float*>(in));
    zfp_field_set_size_1d(field_, n);
    zfp_stream_rewind(zfp_);
    return zfp_compress(zfp_, field_);
  }

  // Decodes the stream in the scratch buffer into out[0..n); returns the
  // bytes libzfp consumed (0 if it failed).
  size_t decompress(float* out, size_t n) {
    zfp_field_set_pointer(field_, out);
    zfp_field_set_size_1d(field_, n);
    zfp_stream_rewind(zfp_);
    if (zfp_decompress(zfp_, field_) == 0) return 0;
    return zfp_stream_compressed_size(zfp_);
  }

 private:
  std::vector<uint64_t>& scratch_;
  zfp_stream* zfp_;
  bitstream* bits_;
  zfp_field* field_;
};

// What went wrong in one chunk inside a parallel region (exceptions must not
// leave the region, so they are raised after it).
enum class ChunkFailure : uint8_t {
  kNone,
  kNoMemory,
  kZfpFailed,
  kNonFinite,
  kWrongLength,
  kReadPastScratch
};

// Scratch buffers for each thread, allocated before the parallel region.
std::vector<std::vector<uint64_t>> make_scratch(int threads, size_t chunk_floats) {
  return std::vector<std::vector<uint64_t>>(
      static_cast<size_t>(threads),
      std::vector<uint64_t>(stream_bound_bytes(chunk_floats) / kScratchUnit, 0));
}

}  // namespace

ZfpCodec::ZfpCodec(const CodecSpec& spec) : Codec(spec) {
  spec.require_only(
      {"mode", "rate", "tolerance", "precision", "chunk", "threads", "nonfinite", "impl"});
  const std::string mode = spec.get_string("mode", "rate");
  const char* own_param = nullptr;
  if (mode == "rate") {
    mode_ = ZfpMode::kRate;
    own_param = "rate";
  } else if (mode == "accuracy") {
    mode_ = ZfpMode::kAccuracy;
    own_param = "tolerance";
  } else if (mode == "precision") {
    mode_ = ZfpMode::kPrecision;
    own_param = "precision";
  } else if (mode == "reversible") {
    mode_ = ZfpMode::kReversible;
  } else {
    bad_param("mode", "must be rate, accuracy, precision or reversible, got '" + mode + "'");
  }
  for (const char* key : {"rate", "tolerance", "precision"}) {
    if (spec.has(key) && (own_param == nullptr || std::string(key) != own_param))
      bad_param(key, "does not apply to mode " + mode);
  }
  const std::string impl = spec.get_string("impl", mode_ == ZfpMode::kRate ? "native" : "libzfp");
  if (impl != "native" && impl != "libzfp")
    bad_param("impl", "must be native or libzfp, got '" + impl + "'");
  if (impl == "native" && mode_ != ZfpMode::kRate)
    bad_param("impl", "native codes only mode rate; mode " + mode + " needs impl libzfp");
  native_ = impl == "native";

  // Closed however the constructor leaves (bad parameters throw below).
  std::unique_ptr<zfp_stream, void (*)(zfp_stream*)> owned(zfp_stream_open(nullptr),
                                                           zfp_stream_close);
  zfp_stream* zfp = owned.get();
  if (zfp == nullptr) throw std::bad_alloc();
  switch (mode_) {
    case ZfpMode::kRate:
      rate_ = spec.get_double("rate", 16.0);
      if (!(rate_ > 0 && rate_ <= 32)) bad_param("rate", "must be in (0, 32] bits per value");
      zfp_stream_set_rate(zfp, rate_, zfp_type_float, 1, zfp_false);
      break;
    case ZfpMode::kAccuracy:
      if (!spec.has("tolerance")) bad_param("tolerance", "is required for mode accuracy");
      tolerance_ = spec.get_double("tolerance", 0);
      if (!(tolerance_ > 0) || !std::isfinite(tolerance_))
        bad_param("tolerance", "must be a finite number > 0");
      zfp_stream_set_accuracy(zfp, tolerance_);
      break;
    case ZfpMode::kPrecision: {
      if (!spec.has("precision")) bad_param("precision", "is required for mode precision");
      const int64_t precision = spec.get_int("precision", 0);
      if (precision < 1 || precision > 32) bad_param("precision", "must be in 1..32");
      precision_ = static_cast<uint32_t>(precision);
      zfp_stream_set_precision(zfp, precision_);
      break;
    }
    case ZfpMode::kReversible:
      zfp_stream_set_reversible(zfp);
      break;
  }
  zfp_mode_word_ = zfp_stream_mode(zfp);
  if (mode_ == ZfpMode::kRate) {
    unsigned int min_bits = 0, max_bits = 0;
    zfp_stream_params(zfp, &min_bits, &max_bits, nullptr, nullptr);
    block_bits_ = max_bits;
    // The native coder follows libzfp's rate rule; both must agree.
    if (min_bits != max_bits || max_bits != zfp_fixed_rate::block_bits(rate_))
      throw std::logic_error("zfp codec: libzfp's fixed-rate block size differs from ours");
  }
  zfp_field* field = zfp_field_1d(nullptr, zfp_type_float, kMaxChunkFloats);
  const size_t zfp_bound = field ? zfp_stream_maximum_size(zfp, field) : 0;
  if (field) zfp_field_free(field);
  owned.reset();
  // The decoder's scratch sizing relies on our per-block read bound covering
  // libzfp's own worst case, and on words that fit the scratch unit.
  const size_t word_bits = stream_alignment();
  if (word_bits % 8 != 0 || word_bits == 0 || word_bits > 64 || zfp_bound == 0 ||
      zfp_bound > stream_bound_bytes(kMaxChunkFloats))
    throw std::logic_error("zfp codec: libzfp word size or stream bound differs from this build");

  const int64_t chunk = spec.get_int("chunk", 65536);
  if (chunk < 1 || chunk > static_cast<int64_t>(kMaxChunkFloats))
    bad_param("chunk", "must be in 1.." + std::to_string(kMaxChunkFloats) + " floats");
  chunk_ = static_cast<size_t>(chunk);
  const int64_t threads = spec.get_int("threads", 1);
  if (threads < 0 || threads > kMaxThreads)
    bad_param("threads", "must be in 0.." + std::to_string(kMaxThreads) + " (0 = all cores)");
  threads_ = static_cast<int>(threads);
  const std::string nonfinite = spec.get_string("nonfinite", "raw");
  if (nonfinite != "raw" && nonfinite != "fail")
    bad_param("nonfinite", "must be raw or fail, got '" + nonfinite + "'");
  fail_on_nonfinite_ = nonfinite == "fail";
}

int ZfpCodec::threads() const {
  return threads_ == 0 ? omp_get_num_procs() : threads_;
}

std::array<uint32_t, 4> ZfpCodec::header_params() const {
  return {static_cast<uint32_t>(mode_), static_cast<uint32_t>(chunk_),
          static_cast<uint32_t>(zfp_mode_word_), static_cast<uint32_t>(zfp_mode_word_ >> 32)};
}

size_t ZfpCodec::max_body_bytes(size_t n) const {
  return ChunkLayout{n, chunk_}.table_bytes() + n * sizeof(float);
}

size_t ZfpCodec::encode_body(const float* in, size_t n, uint8_t* out, size_t, uint16_t&) {
  const ChunkLayout layout{n, chunk_};
  const size_t count = layout.count();
  const size_t table = layout.table_bytes();
  if (count == 0) return 0;
  const int team = static_cast<int>(std::min<size_t>(static_cast<size_t>(threads()), count));
  // The native coder writes straight into the chunk's slot: no scratch.
  auto scratch = make_scratch(team, native_ ? 0 : std::min(chunk_, n));
  const auto word_bits = static_cast<uint32_t>(stream_alignment());
  std::vector<uint32_t> entries(count);
  std::vector<ChunkFailure> failures(count, ChunkFailure::kNone);
  std::vector<size_t> bad_index(count, n);
  std::vector<uint8_t> raw_for_nonfinite(count, 0);

#pragma omp parallel num_threads(team)
  {
    ZfpWorker worker(zfp_mode_word_, scratch[static_cast<size_t>(omp_get_thread_num())]);
#pragma omp for schedule(dynamic, 1)
    for (int64_t k = 0; k < static_cast<int64_t>(count); ++k) {
      const size_t start = layout.start(size_t(k)), length = layout.length(size_t(k));
      const size_t raw_bytes = length * sizeof(float);
      uint8_t* slot = out + table + start * sizeof(float);
      const size_t nonfinite_at = first_nonfinite(in + start, length);
      size_t bytes = 0;
      if (nonfinite_at < length) {
        if (fail_on_nonfinite_) {
          failures[k] = ChunkFailure::kNonFinite;
          bad_index[k] = start + nonfinite_at;
          continue;
        }
        raw_for_nonfinite[k] = 1;
      } else if (native_) {
        bytes = zfp_fixed_rate::stream_bytes(length, block_bits_, word_bits);
        if (bytes < raw_bytes) {
          zfp_fixed_rate::encode(in + start, length, block_bits_, word_bits, slot);
          entries[k] = static_cast<uint32_t>(bytes);
          continue;
        }
      } else if (!worker.ok()) {
        failures[k] = ChunkFailure::kNoMemory;
        continue;
      } else {
        bytes = worker.compress(in + start, length);
        if (bytes == 0) {
          failures[k] = ChunkFailure::kZfpFailed;
          continue;
        }
      }
      if (bytes == 0 || bytes >= raw_bytes) {
        std::memcpy(slot, in + start, raw_bytes);
        entries[k] = kRawChunkBit | static_cast<uint32_t>(raw_bytes);
      } else {
        std::memcpy(slot, worker.scratch_bytes(), bytes);
        entries[k] = static_cast<uint32_t>(bytes);
      }
    }
  }

  for (size_t k = 0; k < count; ++k) {
    switch (failures[k]) {
      case ChunkFailure::kNone:
        break;
      case ChunkFailure::kNonFinite: {
        const size_t first = *std::min_element(bad_index.begin(), bad_index.end());
        throw std::invalid_argument("codec " + spec().to_string() + ": non-finite value " +
                                    std::to_string(in[first]) + " at index " +
                                    std::to_string(first) + " (nonfinite: fail)");
      }
      case ChunkFailure::kNoMemory:
        throw std::bad_alloc();
      default:
        throw std::runtime_error("codec " + spec().to_string() + ": libzfp failed on chunk " +
                                 std::to_string(k));
    }
  }

  count_nonfinite_raw_chunks(
      uint64_t(std::count(raw_for_nonfinite.begin(), raw_for_nonfinite.end(), uint8_t(1))));

  size_t write = table;
  for (size_t k = 0; k < count; ++k) {
    const size_t bytes = entries[k] & kChunkSizeMask;
    const size_t slot = table + layout.start(k) * sizeof(float);
    if (slot != write) std::memmove(out + write, out + slot, bytes);
    store_le32(out + 4 * k, entries[k]);
    write += bytes;
  }
  return write;
}

void ZfpCodec::decode_body(const uint8_t* in, size_t size, float* out, size_t n,
                           uint16_t flags) const {
  if (flags != 0)
    throw DecodeError("flags", "zfp payload has flags " + std::to_string(flags) + ", expected 0");
  const ChunkLayout layout{n, chunk_};
  const size_t count = layout.count();
  const size_t table = layout.table_bytes();
  if (size < table)
    throw DecodeError("body", "zfp chunk table of " + std::to_string(count) + " chunks needs " +
                                  std::to_string(table) + " bytes, body holds " +
                                  std::to_string(size));

  // Fixed-rate streams have one possible size: maxbits per block, in words.
  uint32_t minbits = 0, maxbits = 0;
  {
    zfp_stream* zfp = zfp_stream_open(nullptr);
    if (zfp == nullptr) throw std::bad_alloc();
    zfp_stream_set_mode(zfp, zfp_mode_word_);
    unsigned int min_bits = 0, max_bits = 0;
    zfp_stream_params(zfp, &min_bits, &max_bits, nullptr, nullptr);
    zfp_stream_close(zfp);
    minbits = min_bits;
    maxbits = max_bits;
  }
  const bool fixed_rate = mode_ == ZfpMode::kRate && minbits == maxbits;
  const size_t word_bytes = zfp_word_bytes();

  std::vector<size_t> offsets(count);
  size_t offset = table;
  for (size_t k = 0; k < count; ++k) {
    const uint32_t entry = load_le32(in + 4 * k);
    const size_t bytes = entry & kChunkSizeMask;
    const size_t raw_bytes = layout.length(k) * sizeof(float);
    auto where = [&] { return "zfp chunk " + std::to_string(k) + " of " + std::to_string(count); };
    if (entry & kRawChunkBit) {
      if (bytes != raw_bytes)
        throw DecodeError("body", where() + ": raw chunk of " + std::to_string(bytes) +
                                      " bytes for " + std::to_string(raw_bytes / 4) + " floats");
    } else {
      if (bytes == 0 || bytes % word_bytes != 0 || bytes >= raw_bytes)
        throw DecodeError("body", where() + ": stream of " + std::to_string(bytes) +
                                      " bytes is not whole words smaller than the raw " +
                                      std::to_string(raw_bytes) + " bytes");
      if (fixed_rate) {
        const size_t word_bits = 8 * word_bytes;
        const size_t expected =
            (blocks_of(layout.length(k)) * maxbits + word_bits - 1) / word_bits * word_bytes;
        if (bytes != expected)
          throw DecodeError("body", where() + ": fixed-rate stream of " + std::to_string(bytes) +
                                        " bytes, expected " + std::to_string(expected));
      }
    }
    if (bytes > size - offset)
      throw DecodeError("body",
                        where() + " ends past the body (" + std::to_string(size) + " bytes)");
    offsets[k] = offset;
    offset += bytes;
  }
  if (offset != size)
    throw DecodeError("body", "zfp chunks end at byte " + std::to_string(offset) + ", body holds " +
                                  std::to_string(size));
  if (count == 0) return;

  const int team = static_cast<int>(std::min<size_t>(static_cast<size_t>(threads()), count));
  auto scratch = make_scratch(team, native_ ? 0 : std::min(chunk_, n));
  std::vector<ChunkFailure> failures(count, ChunkFailure::kNone);
  std::vector<size_t> consumed(count, 0);

#pragma omp parallel num_threads(team)
  {
    ZfpWorker worker(zfp_mode_word_, scratch[static_cast<size_t>(omp_get_thread_num())]);
#pragma omp for schedule(dynamic, 1)
    for (int64_t k = 0; k < static_cast<int64_t>(count); ++k) {
      const uint32_t entry = load_le32(in + 4 * k);
      const size_t bytes = entry & kChunkSizeMask;
      const size_t start = layout.start(size_t(k)), length = layout.length(size_t(k));
      if (entry & kRawChunkBit) {
        std::memcpy(out + start, in + offsets[k], bytes);
        continue;
      }
      if (native_) {
        // The table check above made bytes the exact fixed-rate size, which
        // is all the native decoder reads.
        zfp_fixed_rate::decode(in + offsets[k], length, block_bits_,
                               static_cast<uint32_t>(8 * word_bytes), out + start);
        continue;
      }
      if (!worker.ok()) {
        failures[k] = ChunkFailure::kNoMemory;
        continue;
      }
      std::memcpy(worker.scratch_bytes(), in + offsets[k], bytes);
      consumed[k] = worker.decompress(out + start, length);
      // libzfp reads its stream front to back, so its final position bounds
      // every byte it read: this proves the scratch bound held.
      if (consumed[k] > worker.scratch_capacity())
        failures[k] = ChunkFailure::kReadPastScratch;
      else if (consumed[k] == 0)
        failures[k] = ChunkFailure::kZfpFailed;
      else if (consumed[k] != bytes)
        failures[k] = ChunkFailure::kWrongLength;
    }
  }

  for (size_t k = 0; k < count; ++k) {
    auto where = [&] { return "zfp chunk " + std::to_string(k) + " of " + std::to_string(count); };
    switch (failures[k]) {
      case ChunkFailure::kNone:
        break;
      case ChunkFailure::kNoMemory:
        throw std::bad_alloc();
      case ChunkFailure::kWrongLength:
        throw DecodeError("body", where() + ": libzfp consumed " + std::to_string(consumed[k]) +
                                      " bytes of a " +
                                      std::to_string(load_le32(in + 4 * k) & kChunkSizeMask) +
                                      "-byte stream (corrupted stream)");
      default:
        throw DecodeError("body", where() + ": libzfp could not decode the stream");
    }
  }
}

}  // namespace cmpi::compress
