// Shared pieces of the compressed-collective MPI tests: the codecs under
// test, contexts over a private communicator, reproducible per-rank data
// (any rank can regenerate any other rank's input from the printed seed),
// and comparisons that report the first differing element.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "comm/algorithms/compressed_context.h"
#include "compress/codec_registry.h"
#include "compress/splitmix64.h"
#include "tests/support/test_seed.h"

namespace cmpi::testing {

// Lengths every operation is tried with, and chunk sizes that split them
// evenly, unevenly, or not at all.
inline std::vector<size_t> test_lengths() {
  return {0, 1, 7, 1023, (size_t(1) << 20) + 3};
}
inline std::vector<size_t> chunk_sizes_for(size_t n) {
  // 2^20+3 = 16 chunks of 2^16 and 3 elements; allreduce segments of it on
  // 2..8 ranks split unevenly too.
  if (n > 100000) return {size_t(1) << 16};
  return {1, 3, 341, size_t(1) << 18};  // 1023 = 3 x 341; 7 = 3+3+1
}

// zfp in accuracy mode: every decoded value within kZfpTolerance of its input.
constexpr double kZfpTolerance = 1e-3;
inline const char* zfp_accuracy_spec() {
  return "zfp:mode=accuracy,tolerance=0.001";
}

// The codec named by `spec`, or null when it is not registered in this build.
inline std::unique_ptr<compress::Codec> codec_if_available(const std::string& spec) {
  compress::CodecSpec parsed = compress::CodecSpec::parse(spec);
  compress::CodecRegistry registry = compress::CodecRegistry::with_builtin_codecs();
  if (!registry.contains(parsed.name())) return nullptr;
  return registry.create(parsed);
}

#define CMPI_REQUIRE_CODEC(var, spec)                   \
  auto var = ::cmpi::testing::codec_if_available(spec); \
  if (!var) GTEST_SKIP() << "codec '" << (spec) << "' is not registered in this build yet"

// A duplicate of MPI_COMM_WORLD, so the tests' messages never meet anyone else's.
class PrivateComm {
 public:
  PrivateComm() {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~PrivateComm() { MPI_Comm_free(&comm_); }
  PrivateComm(const PrivateComm&) = delete;
  PrivateComm& operator=(const PrivateComm&) = delete;
  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

inline comm::CompressedContext make_context(const PrivateComm& pc, compress::Codec* codec,
                                            size_t chunk_elems,
                                            comm::OpCounters* counters = nullptr) {
  comm::CompressedContext ctx;
  ctx.comm = pc.comm();
  ctx.rank = pc.rank();
  ctx.size = pc.size();
  ctx.group = comm::GroupKind::kWorld;
  ctx.codec = codec;
  ctx.chunk_elems = chunk_elems;
  ctx.tag = 11;
  ctx.counters = counters;
  return ctx;
}

// Reproducible data for stream (a test-chosen id: op, case, rank, ...):
// uniform in (-scale, scale), never all zero. With specials, some values are
// replaced by NaNs with payloads, infinities, -0.0, denormals and extremes,
// which lossless paths must carry bit for bit.
inline std::vector<float> make_data(uint64_t stream, size_t n, bool specials, float scale = 1.0f) {
  std::vector<float> out(n);
  uint64_t state = compress::splitmix64(test_seed() ^ compress::splitmix64(stream));
  for (size_t i = 0; i < n; ++i) {
    state = compress::splitmix64(state);
    float unit = float(state >> 40) / float(1 << 24);  // [0, 1)
    out[i] = scale * (2.0f * unit - 1.0f);
    if (specials && (state & 0xff) < 6) {
      uint32_t bits = 0;
      switch (state & 0x7) {
        case 0:
          bits = 0x7fc00000u | uint32_t((state >> 8) & 0x3fffff);
          break;  // NaN payload
        case 1:
          bits = 0xff800001u;
          break;  // signalling NaN
        case 2:
          bits = 0x7f800000u;
          break;  // +inf
        case 3:
          bits = 0x80000000u;
          break;  // -0.0
        case 4:
          bits = 0x00000001u | uint32_t((state >> 8) & 0x7fffff);
          break;  // denormal
        default:
          bits = 0x7f7fffffu;
          break;  // FLT_MAX
      }
      std::memcpy(&out[i], &bits, sizeof bits);
    }
  }
  return out;
}

// Stream id for (test, case, rank, extra), distinct across the tests' uses.
inline uint64_t stream_id(uint64_t test, uint64_t test_case, uint64_t rank, uint64_t extra = 0) {
  return compress::splitmix64(test * 1000003u + test_case) ^
         compress::splitmix64(rank * 7919u + extra + 1);
}

// True when a and b hold the same bits; otherwise reports the first difference.
inline ::testing::AssertionResult same_bits(const float* a, const float* b, size_t n) {
  if (n == 0 || std::memcmp(a, b, n * sizeof(float)) == 0) return ::testing::AssertionSuccess();
  for (size_t i = 0; i < n; ++i) {
    uint32_t x = 0, y = 0;
    std::memcpy(&x, a + i, 4);
    std::memcpy(&y, b + i, 4);
    if (x != y)
      return ::testing::AssertionFailure()
             << "first difference at element " << i << " of " << n << ": " << a[i] << " (0x"
             << std::hex << x << ") vs " << b[i] << " (0x" << y << std::dec << ")";
  }
  return ::testing::AssertionSuccess();
}
inline ::testing::AssertionResult same_bits(const std::vector<float>& a,
                                            const std::vector<float>& b) {
  if (a.size() != b.size())
    return ::testing::AssertionFailure() << "sizes " << a.size() << " vs " << b.size();
  return same_bits(a.data(), b.data(), a.size());
}

// True when |got[i] - want[i]| <= bound[i] for all i (and both are finite).
template <typename Want, typename Bound>
::testing::AssertionResult within(const float* got, const Want* want, const Bound& bound,
                                  size_t n) {
  for (size_t i = 0; i < n; ++i) {
    double err = std::fabs(double(got[i]) - double(want[i]));
    double b = bound(i);
    if (!(err <= b))
      return ::testing::AssertionFailure()
             << "element " << i << " of " << n << ": got " << got[i] << ", want " << want[i]
             << ", error " << err << " > bound " << b;
  }
  return ::testing::AssertionSuccess();
}

// Every rank holds the same bits as rank 0 in data[0..n).
inline ::testing::AssertionResult same_on_all_ranks(MPI_Comm comm, const float* data, size_t n) {
  std::vector<float> root(data, data + n);
  MPI_Bcast(root.data(), int(n), MPI_FLOAT, 0, comm);
  return same_bits(data, root.data(), n);
}

// Splits total into one count per rank: even, or ragged with zeros for every
// third rank (1, 4, 7) and growing counts elsewhere.
inline std::vector<size_t> split_counts(size_t total, int ranks, bool ragged) {
  std::vector<size_t> weights(ranks, 1);
  if (ragged)
    for (int j = 0; j < ranks; ++j) weights[j] = (j % 3 == 1) ? 0 : size_t(j + 1);
  size_t sum = 0;
  for (size_t w : weights) sum += w;
  std::vector<size_t> counts(ranks, 0);
  size_t given = 0;
  for (int j = 0; j < ranks; ++j) {
    counts[j] = total * weights[j] / sum;
    given += counts[j];
  }
  counts[0] += total - given;  // rank 0's weight is never zero
  return counts;
}

inline size_t total_of(const std::vector<size_t>& counts) {
  size_t sum = 0;
  for (size_t c : counts) sum += c;
  return sum;
}

}  // namespace cmpi::testing
