#include "bench/lossless_references.h"

#include <blosc.h>
#include <lz4.h>
#include <omp.h>
#include <zstd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace cmpi::bench {
namespace {

constexpr size_t kChunkBytes = size_t(1) << 20;
constexpr size_t kFailed = SIZE_MAX;

// Compresses independent kChunkBytes chunks into fixed slots of one buffer;
// the encoded size counts the chunks plus a 4-byte size per chunk, which any
// real container of independent chunks has to carry.
class ChunkedReference : public BenchSubject {
 public:
  explicit ChunkedReference(int max_threads) : max_threads_(std::max(1, max_threads)) {}

  std::string parallelism() const override { return "chunks"; }

  size_t encode(const float* in, size_t n, int threads) override {
    const size_t bytes = n * sizeof(float);
    const size_t chunks = (bytes + kChunkBytes - 1) / kChunkBytes;
    slot_ = chunk_bound(kChunkBytes);
    if (buffer_.size() < chunks * slot_) buffer_.resize(chunks * slot_);
    sizes_.assign(chunks, 0);
    const char* src = reinterpret_cast<const char*>(in);
    const int used = std::clamp(threads, 1, max_threads_);
#pragma omp parallel for num_threads(used) schedule(static)
    for (size_t c = 0; c < chunks; ++c) {
      const size_t chunk = std::min(kChunkBytes, bytes - c * kChunkBytes);
      sizes_[c] = compress_chunk(src + c * kChunkBytes, chunk, buffer_.data() + c * slot_, slot_,
                                 omp_get_thread_num());
    }
    size_t total = size_table_bytes(chunks);
    for (size_t c = 0; c < chunks; ++c) {
      if (sizes_[c] == kFailed)
        throw std::runtime_error(label() + ": compression of chunk " + std::to_string(c) +
                                 " failed");
      total += sizes_[c];
    }
    return total;
  }

  void decode(float* out, size_t n, int threads) override {
    const size_t bytes = n * sizeof(float);
    const size_t chunks = sizes_.size();
    if (chunks != (bytes + kChunkBytes - 1) / kChunkBytes)
      throw std::logic_error(label() + ": decode of a length other than the last encode");
    char* dst = reinterpret_cast<char*>(out);
    const int used = std::clamp(threads, 1, max_threads_);
    std::vector<uint8_t> ok(chunks, 0);
#pragma omp parallel for num_threads(used) schedule(static)
    for (size_t c = 0; c < chunks; ++c) {
      const size_t chunk = std::min(kChunkBytes, bytes - c * kChunkBytes);
      ok[c] = decompress_chunk(buffer_.data() + c * slot_, sizes_[c], dst + c * kChunkBytes, chunk,
                               omp_get_thread_num());
    }
    for (size_t c = 0; c < chunks; ++c)
      if (!ok[c])
        throw std::runtime_error(label() + ": decompression of chunk " + std::to_string(c) +
                                 " failed");
  }

 protected:
  virtual size_t chunk_bound(size_t bytes) const = 0;
  virtual size_t size_table_bytes(size_t chunks) const {
    return 4 * chunks;
  }
  // Returns the compressed size, or kFailed. Runs on OpenMP thread `thread`.
  virtual size_t compress_chunk(const char* src, size_t bytes, char* dst, size_t capacity,
                                int thread) = 0;
  // True if the chunk decompressed to exactly `bytes` bytes.
  virtual bool decompress_chunk(const char* src, size_t size, char* dst, size_t bytes,
                                int thread) = 0;

  const int max_threads_;

 private:
  std::vector<char> buffer_;
  std::vector<size_t> sizes_;
  size_t slot_ = 0;
};

class MemcpyReference final : public ChunkedReference {
 public:
  using ChunkedReference::ChunkedReference;
  std::string label() const override { return "memcpy"; }
  std::string family() const override { return "memcpy"; }
  bool lossless() const override { return true; }

 protected:
  size_t chunk_bound(size_t bytes) const override { return bytes; }
  size_t size_table_bytes(size_t) const override { return 0; }
  size_t compress_chunk(const char* src, size_t bytes, char* dst, size_t, int) override {
    std::memcpy(dst, src, bytes);
    return bytes;
  }
  bool decompress_chunk(const char* src, size_t size, char* dst, size_t bytes, int) override {
    if (size != bytes) return false;
    std::memcpy(dst, src, bytes);
    return true;
  }
};

class ZstdReference final : public ChunkedReference {
 public:
  ZstdReference(int level, int max_threads) : ChunkedReference(max_threads), level_(level) {
    for (int t = 0; t < max_threads_; ++t) {
      compressors_.emplace_back(ZSTD_createCCtx(), &ZSTD_freeCCtx);
      decompressors_.emplace_back(ZSTD_createDCtx(), &ZSTD_freeDCtx);
      if (!compressors_.back() || !decompressors_.back())
        throw std::runtime_error("zstd: cannot create a context");
    }
  }
  std::string label() const override { return "zstd:level=" + std::to_string(level_); }
  std::string family() const override { return "zstd"; }
  bool lossless() const override { return true; }

 protected:
  size_t chunk_bound(size_t bytes) const override { return ZSTD_compressBound(bytes); }
  size_t compress_chunk(const char* src, size_t bytes, char* dst, size_t capacity,
                        int thread) override {
    size_t size =
        ZSTD_compressCCtx(compressors_[size_t(thread)].get(), dst, capacity, src, bytes, level_);
    return ZSTD_isError(size) ? kFailed : size;
  }
  bool decompress_chunk(const char* src, size_t size, char* dst, size_t bytes,
                        int thread) override {
    size_t got = ZSTD_decompressDCtx(decompressors_[size_t(thread)].get(), dst, bytes, src, size);
    return !ZSTD_isError(got) && got == bytes;
  }

 private:
  int level_;
  std::vector<std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)>> compressors_;
  std::vector<std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)>> decompressors_;
};

class Lz4Reference final : public ChunkedReference {
 public:
  using ChunkedReference::ChunkedReference;
  std::string label() const override { return "lz4"; }
  std::string family() const override { return "lz4"; }
  bool lossless() const override { return true; }

 protected:
  size_t chunk_bound(size_t bytes) const override { return size_t(LZ4_compressBound(int(bytes))); }
  size_t compress_chunk(const char* src, size_t bytes, char* dst, size_t capacity, int) override {
    int size = LZ4_compress_default(src, dst, int(bytes), int(capacity));
    return size <= 0 ? kFailed : size_t(size);
  }
  bool decompress_chunk(const char* src, size_t size, char* dst, size_t bytes, int) override {
    return LZ4_decompress_safe(src, dst, int(size), int(bytes)) == int(bytes);
  }
};

// Blosc, one call per piece of at most kPieceBytes (Blosc's buffers are
// limited to 2 GB); within a piece Blosc splits blocks over its own threads.
class BloscReference final : public BenchSubject {
 public:
  BloscReference(std::string compressor, int shuffle, int clevel)
      : compressor_(std::move(compressor)), shuffle_(shuffle), clevel_(clevel) {}

  std::string label() const override {
    return "blosc:" + compressor_ + (shuffle_ == BLOSC_BITSHUFFLE ? "+bitshuffle" : "+shuffle") +
           ",clevel=" + std::to_string(clevel_);
  }
  std::string family() const override { return "blosc"; }
  bool lossless() const override { return true; }
  std::string parallelism() const override { return "internal"; }

  size_t encode(const float* in, size_t n, int threads) override {
    const size_t bytes = n * sizeof(float);
    const size_t pieces = (bytes + kPieceBytes - 1) / kPieceBytes;
    const size_t slot = kPieceBytes + BLOSC_MAX_OVERHEAD;
    const size_t needed = (pieces == 0 ? 0 : (pieces - 1) * slot) +
                          (bytes - (pieces ? (pieces - 1) * kPieceBytes : 0)) + BLOSC_MAX_OVERHEAD;
    if (buffer_.size() < needed) buffer_.resize(needed);
    sizes_.assign(pieces, 0);
    size_t total = 0;
    const char* src = reinterpret_cast<const char*>(in);
    for (size_t p = 0; p < pieces; ++p) {
      const size_t piece = std::min(kPieceBytes, bytes - p * kPieceBytes);
      int size = blosc_compress_ctx(clevel_, shuffle_, sizeof(float), piece, src + p * kPieceBytes,
                                    buffer_.data() + p * slot, piece + BLOSC_MAX_OVERHEAD,
                                    compressor_.c_str(), 0, threads);
      if (size <= 0)
        throw std::runtime_error(label() + ": blosc_compress_ctx returned " + std::to_string(size));
      sizes_[p] = size_t(size);
      total += size_t(size);
    }
    return total;
  }

  void decode(float* out, size_t n, int threads) override {
    const size_t bytes = n * sizeof(float);
    const size_t slot = kPieceBytes + BLOSC_MAX_OVERHEAD;
    char* dst = reinterpret_cast<char*>(out);
    for (size_t p = 0; p < sizes_.size(); ++p) {
      const size_t piece = std::min(kPieceBytes, bytes - p * kPieceBytes);
      int got =
          blosc_decompress_ctx(buffer_.data() + p * slot, dst + p * kPieceBytes, piece, threads);
      if (got != int(piece))
        throw std::runtime_error(label() + ": blosc_decompress_ctx returned " +
                                 std::to_string(got) + " for a piece of " + std::to_string(piece) +
                                 " bytes");
    }
  }

 private:
  static constexpr size_t kPieceBytes = size_t(1) << 30;
  std::string compressor_;
  int shuffle_;
  int clevel_;
  std::vector<char> buffer_;
  std::vector<size_t> sizes_;
};

}  // namespace

std::vector<std::string> lossless_reference_families() {
  return {"memcpy", "zstd", "lz4", "blosc"};
}

std::vector<std::unique_ptr<BenchSubject>> make_lossless_references(
    const std::vector<std::string>& families, int max_threads) {
  const std::vector<std::string> known = lossless_reference_families();
  for (const auto& family : families) {
    if (std::find(known.begin(), known.end(), family) == known.end())
      throw std::invalid_argument("unknown reference '" + family +
                                  "' (known: memcpy, zstd, lz4, blosc)");
  }
  auto wanted = [&](const std::string& family) {
    return families.empty() ||
           std::find(families.begin(), families.end(), family) != families.end();
  };
  std::vector<std::unique_ptr<BenchSubject>> out;
  if (wanted("memcpy")) out.push_back(std::make_unique<MemcpyReference>(max_threads));
  if (wanted("zstd")) {
    out.push_back(std::make_unique<ZstdReference>(1, max_threads));
    out.push_back(std::make_unique<ZstdReference>(3, max_threads));
  }
  if (wanted("lz4")) out.push_back(std::make_unique<Lz4Reference>(max_threads));
  if (wanted("blosc")) {
    // clevel 5 is Blosc's default for LZ4; zstd runs at Blosc's fastest level.
    out.push_back(std::make_unique<BloscReference>("lz4", BLOSC_SHUFFLE, 5));
    out.push_back(std::make_unique<BloscReference>("lz4", BLOSC_BITSHUFFLE, 5));
    out.push_back(std::make_unique<BloscReference>("zstd", BLOSC_BITSHUFFLE, 1));
  }
  return out;
}

std::string lossless_library_versions() {
  return std::string("zstd ") + ZSTD_versionString() + ", lz4 " + LZ4_versionString() + ", blosc " +
         BLOSC_VERSION_STRING;
}

}  // namespace cmpi::bench
