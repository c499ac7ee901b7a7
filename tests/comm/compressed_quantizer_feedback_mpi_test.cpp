// natural and sign (1 bit + scale) with error feedback through every
// compressed collective: allreduce, reduce-scatter, allgather, broadcast and
// p2p. Each call's encodings of a rank's own data go through its
// ErrorFeedback, whose identity is residual_t + sent_t = input_t +
// residual_(t-1); summed over T calls of the same input x, what arrived plus
// the sender's last residual is T x. The tests check that sum on what the
// collectives deliver (in double, within float rounding), reading the
// residuals under the keys each algorithm documents (codec_steps.h):
//   allgather, broadcast: any number of ranks (compressed bytes are
//     forwarded, never re-encoded), chunked;
//   p2p, reduce-scatter, allreduce: on pairs of ranks, where the reduction
//     has exactly the encodings that carry feedback (own input; allreduce:
//     the owner's result too) and no re-encoded partial sums.
// Every rank of an allreduce and allgather must also hold the same bits.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <string>
#include <vector>

#include "comm/algorithms/codec_steps.h"
#include "comm/algorithms/compressed_collectives.h"
#include "compress/error_feedback.h"
#include "tests/comm/compressed_test_support.h"

namespace cmpi::comm {
namespace {

using namespace cmpi::testing;

constexpr uint64_t kTestId = 31;
constexpr uint64_t kBufferKey = 9;
constexpr int kCalls = 6;
constexpr size_t kChunk = 250;

std::vector<std::string> quantizers() {
  return {"natural", "sign", "sign:bucket=8"};
}

// The residual of `length` values that a collective fed back under `site`
// and `part`, chunk by chunk (chunks of kChunk, one codec step each).
std::vector<double> residual_of(const compress::ErrorFeedback& feedback, FeedbackSite site,
                                uint64_t part, size_t length) {
  std::vector<double> out;
  for (size_t k = 0; k * kChunk < length; ++k) {
    const auto found = feedback.residuals().find(feedback_key(kBufferKey, site, part, k));
    if (found == feedback.residuals().end()) {
      ADD_FAILURE() << "no residual for chunk " << k << " of site " << int(site);
      out.resize(out.size() + std::min(kChunk, length - k * kChunk), 0.0);
      continue;
    }
    out.insert(out.end(), found->second.begin(), found->second.end());
  }
  return out;
}

// |got - want| within the float rounding of kCalls additions of values up
// to `scale`, per element; reports the first miss.
::testing::AssertionResult sums_match(const std::vector<double>& got,
                                      const std::vector<double>& want, double scale) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "sizes " << got.size() << " vs " << want.size();
  const double bound = 4 * kCalls * scale * std::ldexp(1.0, -23);
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= bound))
      return ::testing::AssertionFailure()
             << "element " << i << ": delivered + residual " << got[i] << ", want " << want[i]
             << " (bound " << bound << ", seed " << test_seed() << ")";
  return ::testing::AssertionSuccess();
}

double largest(const std::vector<double>& v, double floor = 1.0) {
  for (double x : v) floor = std::max(floor, std::fabs(x));
  return floor;
}

// A one-source transfer (broadcast, p2p) repeated kCalls times: what arrived
// in all calls plus the sender's residual is kCalls times the input.
::testing::AssertionResult delivered_plus_residual_is_calls_times(
    const std::vector<double>& delivered, const std::vector<double>& residual,
    const std::vector<float>& x) {
  std::vector<double> got(x.size()), want(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    got[i] = delivered[i] + residual[i];
    want[i] = kCalls * double(x[i]);
  }
  return sums_match(got, want, largest(residual) + largest(delivered) / kCalls);
}

struct Group {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  ~Group() {
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
};

// Pairs of consecutive world ranks (a lone last rank keeps a group of one).
void pair_up(Group& g) {
  int world = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world);
  MPI_Comm_split(MPI_COMM_WORLD, world / 2, world, &g.comm);
  MPI_Comm_rank(g.comm, &g.rank);
  MPI_Comm_size(g.comm, &g.size);
}
void whole_world(Group& g) {
  MPI_Comm_dup(MPI_COMM_WORLD, &g.comm);
  MPI_Comm_rank(g.comm, &g.rank);
  MPI_Comm_size(g.comm, &g.size);
}

struct Feedback {
  explicit Feedback(const std::string& spec) : feedback(codec_if_available(spec)) {}
  compress::ErrorFeedback feedback;
  CompressedContext context(const Group& g) {
    CompressedContext ctx;
    ctx.comm = g.comm;
    ctx.rank = g.rank;
    ctx.size = g.size;
    ctx.codec = &feedback.codec();
    ctx.feedback = &feedback;
    ctx.buffer_key = kBufferKey;
    ctx.chunk_elems = kChunk;
    ctx.tag = 12;
    return ctx;
  }
};

// Gathers every rank's residual (n values each) of the group.
std::vector<double> gather(const Group& g, const std::vector<double>& mine) {
  std::vector<double> all(mine.size() * size_t(g.size));
  MPI_Allgather(mine.data(), int(mine.size()), MPI_DOUBLE, all.data(), int(mine.size()), MPI_DOUBLE,
                g.comm);
  return all;
}

TEST(QuantizerFeedback, AllgatherDeliversInputTimesCallsMinusResidual) {
  for (const std::string& spec : quantizers()) {
    SCOPED_TRACE(spec);
    Group g;
    whole_world(g);
    Feedback f(spec);
    const size_t n = 777;
    const std::vector<size_t> counts(size_t(g.size), n);
    const auto x = make_data(stream_id(kTestId, 1, uint64_t(g.rank)), n, false);
    std::vector<float> out(n * size_t(g.size));
    std::vector<double> delivered(out.size(), 0.0);
    CompressedContext ctx = f.context(g);
    for (int t = 0; t < kCalls; ++t) {
      ring_allgather(ctx, x.data(), out.data(), counts);
      ASSERT_TRUE(same_on_all_ranks(g.comm, out.data(), out.size())) << "call " << t;
      for (size_t i = 0; i < out.size(); ++i) delivered[i] += out[i];
    }
    const auto residuals = gather(g, residual_of(f.feedback, FeedbackSite::kAllgatherShard, 0, n));
    std::vector<double> got(out.size()), want(out.size());
    for (int j = 0; j < g.size; ++j) {
      const auto xj = make_data(stream_id(kTestId, 1, uint64_t(j)), n, false);
      for (size_t i = 0; i < n; ++i) {
        got[j * n + i] = delivered[j * n + i] + residuals[j * n + i];
        want[j * n + i] = kCalls * double(xj[i]);
      }
    }
    EXPECT_TRUE(sums_match(got, want, largest(residuals) + largest(delivered) / kCalls));
  }
}

TEST(QuantizerFeedback, BroadcastDeliversInputTimesCallsMinusRootResidual) {
  for (const std::string& spec : quantizers()) {
    SCOPED_TRACE(spec);
    Group g;
    whole_world(g);
    Feedback f(spec);
    const size_t n = 1001;
    const int root = g.size - 1;
    const auto x = make_data(stream_id(kTestId, 2, 0), n, false);
    std::vector<double> delivered(n, 0.0);
    CompressedContext ctx = f.context(g);
    for (int t = 0; t < kCalls; ++t) {
      std::vector<float> data = g.rank == root ? x : std::vector<float>(n, 0.f);
      chain_broadcast(ctx, data.data(), n, root);
      ASSERT_TRUE(same_on_all_ranks(g.comm, data.data(), n)) << "call " << t;
      for (size_t i = 0; i < n; ++i) delivered[i] += data[i];
    }
    std::vector<double> residual(n, 0.0);
    if (g.rank == root) residual = residual_of(f.feedback, FeedbackSite::kBroadcastRoot, 0, n);
    MPI_Bcast(residual.data(), int(n), MPI_DOUBLE, root, g.comm);
    EXPECT_TRUE(delivered_plus_residual_is_calls_times(delivered, residual, x));
  }
}

TEST(QuantizerFeedback, P2pDeliversInputTimesCallsMinusSenderResidual) {
  for (const std::string& spec : quantizers()) {
    SCOPED_TRACE(spec);
    Group g;
    pair_up(g);
    if (g.size < 2) continue;  // the odd rank out
    Feedback f(spec);
    const size_t n = 600;
    const int sender = 1, receiver = 0;  // the receiver checks: world rank 0 is one
    const auto x = make_data(stream_id(kTestId, 3, 0), n, false);
    std::vector<double> delivered(n, 0.0);
    CompressedContext ctx = f.context(g);
    for (int t = 0; t < kCalls; ++t) {
      if (g.rank == sender) {
        compressed_send(ctx, x.data(), n, receiver);
      } else {
        std::vector<float> data(n);
        compressed_recv(ctx, data.data(), n, sender);
        for (size_t i = 0; i < n; ++i) delivered[i] += data[i];
      }
    }
    std::vector<double> residual(n, 0.0);
    if (g.rank == sender)
      residual = residual_of(f.feedback, FeedbackSite::kSend, uint64_t(receiver), n);
    MPI_Bcast(residual.data(), int(n), MPI_DOUBLE, sender, g.comm);
    if (g.rank == sender) continue;
    EXPECT_TRUE(delivered_plus_residual_is_calls_times(delivered, residual, x));
  }
}

// Two ranks, rank r owns segment r: it receives the other's encoded part
// (fed back under kReduceScatterInput, part r) and adds its own exactly.
TEST(QuantizerFeedback, PairReduceScatterDeliversSumMinusSenderResidual) {
  for (const std::string& spec : quantizers()) {
    SCOPED_TRACE(spec);
    Group g;
    pair_up(g);
    if (g.size < 2) continue;
    Feedback f(spec);
    const size_t n = 500;
    const std::vector<size_t> counts = {n, n};
    const auto mine = make_data(stream_id(kTestId, 4, uint64_t(g.rank)), 2 * n, false);
    const auto other = make_data(stream_id(kTestId, 4, uint64_t(1 - g.rank)), 2 * n, false);
    std::vector<double> delivered(n, 0.0);
    CompressedContext ctx = f.context(g);
    for (int t = 0; t < kCalls; ++t) {
      std::vector<float> out(n);
      ring_reduce_scatter(ctx, mine.data(), out.data(), counts);
      for (size_t i = 0; i < n; ++i) delivered[i] += out[i];
    }
    // This rank's input residual is for the other's segment; swap them.
    auto sent = residual_of(f.feedback, FeedbackSite::kReduceScatterInput, uint64_t(1 - g.rank), n);
    std::vector<double> received(n);
    MPI_Sendrecv(sent.data(), int(n), MPI_DOUBLE, 1 - g.rank, 0, received.data(), int(n),
                 MPI_DOUBLE, 1 - g.rank, 0, g.comm, MPI_STATUS_IGNORE);
    const size_t at = size_t(g.rank) * n;
    std::vector<double> got(n), want(n);
    for (size_t i = 0; i < n; ++i) {
      got[i] = delivered[i] + received[i];
      want[i] = kCalls * (double(mine[at + i]) + double(other[at + i]));
    }
    EXPECT_TRUE(sums_match(got, want, largest(received) + largest(delivered) / kCalls));
  }
}

// Two ranks: the owner's result is its sum passed through feedback once more
// (kAllreduceResult), so the delivered total misses both residuals.
TEST(QuantizerFeedback, PairAllreduceDeliversSumMinusBothResiduals) {
  for (const std::string& spec : quantizers()) {
    SCOPED_TRACE(spec);
    Group g;
    pair_up(g);
    if (g.size < 2) continue;
    Feedback f(spec);
    const size_t n = 1000, half = n / 2;
    const auto mine = make_data(stream_id(kTestId, 5, uint64_t(g.rank)), n, false);
    const auto other = make_data(stream_id(kTestId, 5, uint64_t(1 - g.rank)), n, false);
    std::vector<double> delivered(n, 0.0);
    CompressedContext ctx = f.context(g);
    for (int t = 0; t < kCalls; ++t) {
      std::vector<float> data = mine;
      ring_allreduce(ctx, data.data(), n);
      ASSERT_TRUE(same_on_all_ranks(g.comm, data.data(), n)) << "call " << t;
      for (size_t i = 0; i < n; ++i) delivered[i] += data[i];
    }
    auto sent =
        residual_of(f.feedback, FeedbackSite::kReduceScatterInput, uint64_t(1 - g.rank), half);
    const auto result = residual_of(f.feedback, FeedbackSite::kAllreduceResult, 0, half);
    std::vector<double> received(half);
    MPI_Sendrecv(sent.data(), int(half), MPI_DOUBLE, 1 - g.rank, 0, received.data(), int(half),
                 MPI_DOUBLE, 1 - g.rank, 0, g.comm, MPI_STATUS_IGNORE);
    const size_t at = size_t(g.rank) * half;  // this rank's segment
    std::vector<double> got(half), want(half);
    for (size_t i = 0; i < half; ++i) {
      got[i] = delivered[at + i] + received[i] + result[i];
      want[i] = kCalls * (double(mine[at + i]) + double(other[at + i]));
    }
    EXPECT_TRUE(
        sums_match(got, want, largest(received) + largest(result) + largest(delivered) / kCalls));
  }
}

}  // namespace
}  // namespace cmpi::comm
