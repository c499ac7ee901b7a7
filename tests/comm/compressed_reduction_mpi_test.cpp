// Compressed ring reduce-scatter and allreduce. Every rank regenerates every
// rank's input, so the tests know the sum in the ring's own order (segment j
// summed x[j+1] + x[j+2] + ... + x[j]), the exact sum (double) and sum|x|:
//   identity  the ring-order sum bit for bit, and within 2·γ(N-1)·sum|x| of
//             MPI_Reduce_scatter / MPI_Allreduce (both orders are within
//             γ(N-1)·sum|x| of the exact sum, γ(k) = k·u/(1-k·u), u = 2^-24);
//   mpc       the identity ring's result bit for bit;
//   zfp       accuracy mode, tolerance t: within E·t + γ(N-1)·(sum|x| + E·t)
//             of the exact sum, with E = N-1 encodings per element for
//             reduce-scatter and N for allreduce (the stated error growth).
// Allreduce results must hold the same bits on every rank, whatever the codec.
#include <gtest/gtest.h>

#include <cmath>

#include "comm/algorithms/compressed_collectives.h"
#include "tests/comm/compressed_test_support.h"

namespace cmpi::comm {
namespace {

using namespace cmpi::testing;

constexpr uint64_t kReduceScatterId = 3;
constexpr uint64_t kAllreduceId = 4;

double gamma_of(int k) {
  const double u = std::ldexp(1.0, -24);
  return k * u / (1 - k * u);
}

struct Sums {
  std::vector<float> ring_order;
  std::vector<double> exact;
  std::vector<double> magnitude;  // sum of |x|
};

// Sums of elements [begin, end) of the ranks' inputs, all in segment `segment`.
void add_segment_sums(const std::vector<std::vector<float>>& inputs, int segment, size_t begin,
                      size_t end, Sums& sums) {
  const int ranks = int(inputs.size());
  for (size_t i = begin; i < end; ++i) {
    float ring = inputs[(segment + 1) % ranks][i];
    double exact = 0, magnitude = 0;
    for (int m = 2; m <= ranks; ++m) ring = ring + inputs[(segment + m) % ranks][i];
    for (int j = 0; j < ranks; ++j) {
      exact += inputs[j][i];
      magnitude += std::fabs(double(inputs[j][i]));
    }
    sums.ring_order.push_back(ring);
    sums.exact.push_back(exact);
    sums.magnitude.push_back(magnitude);
  }
}

std::vector<std::vector<float>> all_inputs(uint64_t test, uint64_t test_case, int ranks, size_t n) {
  std::vector<std::vector<float>> inputs;
  for (int j = 0; j < ranks; ++j)
    inputs.push_back(make_data(stream_id(test, test_case, j), n, false));
  return inputs;
}

// Checks `got` (what the compressed op produced) against the sums and the
// plain MPI result; `identity_ring` is the identity codec's result (mpc).
void expect_reduction(const compress::Codec& codec, int ranks, int encodings,
                      const std::vector<float>& got, const std::vector<float>& mpi,
                      const Sums& sums, const std::vector<float>* identity_ring) {
  const size_t n = got.size();
  if (codec.lossless()) {
    EXPECT_TRUE(same_bits(got, sums.ring_order)) << "ring-order sum";
    if (identity_ring) EXPECT_TRUE(same_bits(got, *identity_ring)) << "identity-codec ring";
    const double g = 2 * gamma_of(ranks - 1);
    EXPECT_TRUE(within(
        got.data(), mpi.data(), [&](size_t i) { return g * sums.magnitude[i]; }, n))
        << "vs the plain MPI reduction";
  } else {
    const double t = kZfpTolerance * encodings, g = gamma_of(ranks - 1);
    EXPECT_TRUE(within(
        got.data(), sums.exact.data(),
        [&](size_t i) { return t + g * (sums.magnitude[i] + t) + 1e-12; }, n))
        << encodings << " encodings of tolerance " << kZfpTolerance;
  }
}

void check_reduce_scatter(compress::Codec& codec, compress::Codec* identity) {
  PrivateComm pc;
  const int ranks = pc.size(), me = pc.rank();
  uint64_t test_case = 0;
  for (size_t length : test_lengths()) {
    for (bool ragged : {false, true}) {
      const std::vector<size_t> counts = split_counts(length, ranks, ragged);
      std::vector<int> int_counts(counts.begin(), counts.end());
      size_t begin = 0;
      for (int j = 0; j < me; ++j) begin += counts[j];
      for (size_t chunk : chunk_sizes_for(length)) {
        ++test_case;
        SCOPED_TRACE("length " + std::to_string(length) + (ragged ? " ragged" : " even") +
                     ", chunk_elems " + std::to_string(chunk) + ", rank " + std::to_string(me));
        auto inputs = all_inputs(kReduceScatterId, test_case, ranks, length);
        const std::vector<float>& in = inputs[me];
        std::vector<float> got(counts[me], -5.0f), mpi(counts[me]);
        CompressedContext ctx = make_context(pc, &codec, chunk);
        ring_reduce_scatter(ctx, in.data(), got.data(), counts);
        MPI_Reduce_scatter(in.data(), mpi.data(), int_counts.data(), MPI_FLOAT, MPI_SUM, pc.comm());
        std::vector<float> identity_ring(counts[me]);
        if (identity) {
          CompressedContext plain = make_context(pc, identity, chunk);
          ring_reduce_scatter(plain, in.data(), identity_ring.data(), counts);
        }
        Sums sums;
        add_segment_sums(inputs, me, begin, begin + counts[me], sums);
        expect_reduction(codec, ranks, ranks - 1, got, mpi, sums,
                         identity ? &identity_ring : nullptr);
      }
    }
  }
}

void check_allreduce(compress::Codec& codec, compress::Codec* identity) {
  PrivateComm pc;
  const int ranks = pc.size(), me = pc.rank();
  uint64_t test_case = 0;
  for (size_t n : test_lengths()) {
    for (size_t chunk : chunk_sizes_for(n)) {
      ++test_case;
      SCOPED_TRACE("n " + std::to_string(n) + ", chunk_elems " + std::to_string(chunk) + ", rank " +
                   std::to_string(me));
      auto inputs = all_inputs(kAllreduceId, test_case, ranks, n);
      std::vector<float> got = inputs[me], mpi(n);
      CompressedContext ctx = make_context(pc, &codec, chunk);
      ring_allreduce(ctx, got.data(), n);
      MPI_Allreduce(inputs[me].data(), mpi.data(), int(n), MPI_FLOAT, MPI_SUM, pc.comm());
      std::vector<float> identity_ring = inputs[me];
      if (identity) {
        CompressedContext plain = make_context(pc, identity, chunk);
        ring_allreduce(plain, identity_ring.data(), n);
      }
      // Segment j: n/N elements, one more for the first n%N ranks.
      Sums sums;
      size_t begin = 0;
      for (int j = 0; j < ranks; ++j) {
        const size_t length = n / ranks + (size_t(j) < n % ranks ? 1 : 0);
        add_segment_sums(inputs, j, begin, begin + length, sums);
        begin += length;
      }
      expect_reduction(codec, ranks, ranks, got, mpi, sums, identity ? &identity_ring : nullptr);
      EXPECT_TRUE(same_on_all_ranks(pc.comm(), got.data(), n)) << "ranks disagree";
    }
  }
}

TEST(CompressedReduceScatter, IdentityIsTheRingOrderSumAndMatchesMpi) {
  CMPI_REQUIRE_CODEC(codec, "identity");
  check_reduce_scatter(*codec, nullptr);
}

TEST(CompressedReduceScatter, MpcEqualsTheIdentityRing) {
  CMPI_REQUIRE_CODEC(identity, "identity");
  CMPI_REQUIRE_CODEC(codec, "mpc");
  check_reduce_scatter(*codec, identity.get());
}

TEST(CompressedReduceScatter, ZfpAccuracyErrorGrowsAtMostWithHops) {
  CMPI_REQUIRE_CODEC(codec, zfp_accuracy_spec());
  check_reduce_scatter(*codec, nullptr);
}

TEST(CompressedAllreduce, IdentityIsTheRingOrderSumAndMatchesMpi) {
  CMPI_REQUIRE_CODEC(codec, "identity");
  check_allreduce(*codec, nullptr);
}

TEST(CompressedAllreduce, MpcEqualsTheIdentityRing) {
  CMPI_REQUIRE_CODEC(identity, "identity");
  CMPI_REQUIRE_CODEC(codec, "mpc");
  check_allreduce(*codec, identity.get());
}

TEST(CompressedAllreduce, ZfpAccuracyErrorGrowsAtMostWithRanksAndRanksAgree) {
  CMPI_REQUIRE_CODEC(codec, zfp_accuracy_spec());
  check_allreduce(*codec, nullptr);
}

}  // namespace
}  // namespace cmpi::comm
