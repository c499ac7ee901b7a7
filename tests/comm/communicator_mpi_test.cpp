// Communicator under MPI: every operation gives the plain MPI result through
// a `none` policy (bit for bit), through an identity-codec policy (the
// compressed algorithms; allreduce and reduce-scatter within float rounding
// of MPI's summation order, everything else bit for bit) and through mpc
// (lossless: bit for bit, reductions equal to the identity ring). Stats count
// calls and bytes as comm_stats.h defines them, compression shows in the
// wire bytes, and the sampled error is measured on schedule.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/policy.h"
#include "tests/comm/communicator_test_support.h"
#include "tests/support/mpi_world.h"
#include "tests/support/test_seed.h"

namespace cmpi::comm {
namespace {

constexpr size_t kFrameAndHeader = 48 + 48;  // chunk frame + codec payload header

using communicator_testing::everything_through;
using communicator_testing::make_comm;
using communicator_testing::uneven;
using testing::world_rank;
using testing::world_size;

// The data rank `rank` contributes to a call identified by `salt`; every rank
// can regenerate every other rank's data, so expectations need no MPI.
std::vector<float> data_of(int rank, size_t n, uint64_t salt) {
  std::mt19937_64 gen = communicator_testing::rank_generator(rank, salt);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen) * 4.0f + 1.0f;
  return v;
}

// Slowly varying values, which mpc and zfp compress well.
std::vector<float> smooth_of(int rank, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(10.0 * std::sin(0.001 * double(i) + rank) + rank);
  return v;
}

bool have_codec(const std::string& name) {
  return compress::CodecRegistry::with_builtin_codecs().contains(name);
}

void expect_bits_equal(const std::vector<float>& got, const std::vector<float>& want,
                       const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", expected " << want[i];
      return;
    }
}

// |got - want| <= size * 2^-23 * sum over ranks |x|: float rounding of a sum
// taken in another order than MPI's.
void expect_sum_close(const std::vector<float>& got, const std::vector<float>& want,
                      const std::vector<double>& abs_sum, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    double bound = world_size() * std::ldexp(abs_sum[i], -23);
    if (std::fabs(double(got[i]) - double(want[i])) > bound) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", MPI gives " << want[i];
      return;
    }
  }
}

// Runs every operation on `comm` and compares with the plain result.
// `exact_sums`: reductions must equal MPI's bits (true for the plain path).
void check_every_op(Communicator& comm, Communicator& plain, size_t n, bool exact_sums,
                    const std::string& label) {
  const int rank = comm.rank(), size = comm.size();
  SCOPED_TRACE(label + " n=" + std::to_string(n) + " rank " + std::to_string(rank) + "/" +
               std::to_string(size));

  {  // allreduce
    auto data = data_of(rank, n, 1), ref = data;
    comm.allreduce(data.data(), n, Role::kGradient);
    plain.allreduce(ref.data(), n, Role::kGradient);
    if (exact_sums) {
      expect_bits_equal(data, ref, "allreduce");
    } else {
      std::vector<double> abs_sum(n, 0.0);
      for (int r = 0; r < size; ++r) {
        auto x = data_of(r, n, 1);
        for (size_t i = 0; i < n; ++i) abs_sum[i] += std::fabs(double(x[i]));
      }
      expect_sum_close(data, ref, abs_sum, "allreduce");
    }
  }
  {  // reduce_scatter with uneven blocks
    auto counts = uneven(n, size, 1);
    auto in = data_of(rank, n, 2);
    std::vector<float> out(counts[rank]), ref(counts[rank]);
    comm.reduce_scatter(in.data(), out.data(), counts, Role::kGradient);
    plain.reduce_scatter(in.data(), ref.data(), counts, Role::kGradient);
    if (exact_sums) {
      expect_bits_equal(out, ref, "reduce_scatter");
    } else {
      size_t offset = std::accumulate(counts.begin(), counts.begin() + rank, size_t(0));
      std::vector<double> abs_sum(counts[rank], 0.0);
      for (int r = 0; r < size; ++r) {
        auto x = data_of(r, n, 2);
        for (size_t i = 0; i < counts[rank]; ++i) abs_sum[i] += std::fabs(double(x[offset + i]));
      }
      expect_sum_close(out, ref, abs_sum, "reduce_scatter");
    }
  }
  {  // allgather with uneven shards: the concatenation of everyone's data
    auto counts = uneven(n, size, 2);
    std::vector<float> want;
    for (int r = 0; r < size; ++r) {
      auto x = data_of(r, counts[r], 3);
      want.insert(want.end(), x.begin(), x.end());
    }
    auto mine = data_of(rank, counts[rank], 3);
    std::vector<float> out(want.size());
    comm.allgather(mine.data(), out.data(), counts, Role::kActivation);
    expect_bits_equal(out, want, "allgather");
  }
  for (int root : {0, size - 1}) {  // broadcast
    auto data = rank == root ? data_of(root, n, 4) : std::vector<float>(n, -7.0f);
    comm.broadcast(data.data(), n, root, Role::kWeight);
    expect_bits_equal(data, data_of(root, n, 4), "broadcast from " + std::to_string(root));
  }
  {  // alltoall with uneven blocks: block i of out is rank i's block for me
    auto send_counts = uneven(n, size, rank);
    std::vector<size_t> recv_counts(size);
    for (int r = 0; r < size; ++r) recv_counts[r] = uneven(n, size, r)[rank];
    auto in = data_of(rank, n, 5);
    std::vector<float> want;
    for (int r = 0; r < size; ++r) {
      auto theirs = uneven(n, size, r);
      size_t offset = std::accumulate(theirs.begin(), theirs.begin() + rank, size_t(0));
      auto x = data_of(r, n, 5);
      want.insert(want.end(), x.begin() + offset, x.begin() + offset + theirs[rank]);
    }
    std::vector<float> out(want.size());
    comm.alltoall(in.data(), send_counts, out.data(), recv_counts, Role::kActivation);
    expect_bits_equal(out, want, "alltoall");
  }
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  {  // send / recv along the ring: even ranks send first, odd ranks receive first
    auto mine = data_of(rank, n, 6);
    std::vector<float> got(n);
    if (rank % 2 == 0) {
      comm.send(mine.data(), n, right, 11, Role::kActivation);
      comm.recv(got.data(), n, left, 11, Role::kActivation);
    } else {
      comm.recv(got.data(), n, left, 11, Role::kActivation);
      comm.send(mine.data(), n, right, 11, Role::kActivation);
    }
    expect_bits_equal(got, data_of(left, n, 6), "send/recv");
  }
  {  // sendrecv round the ring
    auto mine = data_of(rank, n, 7);
    std::vector<float> got(n);
    comm.sendrecv(mine.data(), n, right, got.data(), n, left, 12, Role::kActivationGrad);
    expect_bits_equal(got, data_of(left, n, 7), "sendrecv");
  }
  {  // isend / irecv round the ring, waited in either order
    auto mine = data_of(rank, n, 8);
    std::vector<float> got(n);
    auto in = comm.irecv(got.data(), n, left, 13, Role::kActivation);
    auto out = comm.isend(mine.data(), n, right, 13, Role::kActivation);
    comm.wait(in);
    comm.wait(out);
    EXPECT_FALSE(in.pending());
    expect_bits_equal(got, data_of(left, n, 8), "isend/irecv");
  }
  {  // halo exchange along the line: my lower halo is my lower neighbour's upper rows
    size_t lo_rows = n / 2, hi_rows = n - n / 2;  // widths differ per side
    auto lo = data_of(rank, lo_rows, 9), hi = data_of(rank, hi_rows, 10);
    std::vector<float> recv_lo(hi_rows, -1.0f), recv_hi(lo_rows, -1.0f);
    HaloBuffers b;
    b.send_lo = lo.data();
    b.send_lo_count = lo_rows;
    b.send_hi = hi.data();
    b.send_hi_count = hi_rows;
    b.recv_lo = recv_lo.data();
    b.recv_lo_count = hi_rows;
    b.recv_hi = recv_hi.data();
    b.recv_hi_count = lo_rows;
    comm.halo_exchange(b);
    expect_bits_equal(recv_lo,
                      rank > 0 ? data_of(rank - 1, hi_rows, 10) : std::vector<float>(hi_rows, -1),
                      "lower halo");
    expect_bits_equal(
        recv_hi, rank < size - 1 ? data_of(rank + 1, lo_rows, 9) : std::vector<float>(lo_rows, -1),
        "upper halo");
  }
  {  // halo exchange between named peers: ranks r and r + size/2 as the two
     // rows of a tile grid's column (the last rank of an odd group has none)
    const int half = size / 2;
    const int lo_peer = rank >= half && rank < 2 * half ? rank - half : HaloBuffers::kNoPeer;
    const int hi_peer = rank < half ? rank + half : HaloBuffers::kNoPeer;
    size_t lo_rows = n / 3, hi_rows = n - n / 3;
    auto lo = data_of(rank, lo_rows, 11), hi = data_of(rank, hi_rows, 12);
    std::vector<float> recv_lo(hi_rows, -1.0f), recv_hi(lo_rows, -1.0f);
    HaloBuffers b;
    b.lo_peer = lo_peer;
    b.hi_peer = hi_peer;
    b.send_lo = lo.data();
    b.send_lo_count = lo_rows;
    b.send_hi = hi.data();
    b.send_hi_count = hi_rows;
    b.recv_lo = recv_lo.data();
    b.recv_lo_count = hi_rows;
    b.recv_hi = recv_hi.data();
    b.recv_hi_count = lo_rows;
    comm.halo_exchange(b);
    expect_bits_equal(
        recv_lo, lo_peer >= 0 ? data_of(lo_peer, hi_rows, 12) : std::vector<float>(hi_rows, -1),
        "lower halo from a named peer");
    expect_bits_equal(
        recv_hi, hi_peer >= 0 ? data_of(hi_peer, lo_rows, 11) : std::vector<float>(lo_rows, -1),
        "upper halo from a named peer");
  }
}

const size_t kLengths[] = {0, 1, 7, 1023, 5003};

TEST(Communicator, NonePolicyEqualsPlainMpi) {
  Policy none;  // preset none, no rules
  auto comm = make_comm(&none);
  auto plain = make_comm(nullptr);
  for (size_t n : kLengths) check_every_op(*comm, *plain, n, true, "none");
  EXPECT_EQ(comm->stats().total().compressed_calls, 0u);
}

TEST(Communicator, MzhybridPolicyLeavesWorldTrafficPlain) {
  if (!have_codec("zfp") || !have_codec("mpc")) GTEST_SKIP() << "zfp or mpc not registered";
  PolicyConfig config;
  config.preset = "mzhybrid";
  Policy policy(config);
  auto comm = make_comm(&policy);
  auto plain = make_comm(nullptr);
  check_every_op(*comm, *plain, 70000, true, "mzhybrid on world");
  EXPECT_EQ(comm->stats().total().compressed_calls, 0u);
}

TEST(Communicator, IdentityCodecEqualsPlainMpi) {
  // 256-float chunks so that the longer messages travel as many chunks.
  Policy identity(everything_through(compress::CodecSpec("identity"), 1024));
  auto comm = make_comm(&identity);
  auto plain = make_comm(nullptr);
  for (size_t n : kLengths) check_every_op(*comm, *plain, n, false, "identity");
  const OpCounters total = comm->stats().total();
  EXPECT_EQ(total.compressed_calls, total.calls);
  EXPECT_GT(total.calls, 0u);
}

TEST(Communicator, MpcIsLosslessAndReducesLikeTheIdentityRing) {
  if (!have_codec("mpc")) GTEST_SKIP() << "mpc is not registered in the codec registry yet";
  Policy mpc(everything_through(compress::CodecSpec("mpc"), 4096));
  Policy identity(everything_through(compress::CodecSpec("identity"), 4096));
  auto comm = make_comm(&mpc);
  auto ring = make_comm(&identity);
  for (size_t n : kLengths) check_every_op(*comm, *ring, n, true, "mpc vs identity ring");
}

// Plain paths count raw == wire == the bytes of comm_stats.h's algorithms.
TEST(CommunicatorStats, PlainPathCountsCallsAndBytes) {
  Policy none;
  auto comm = make_comm(&none);
  const int rank = comm->rank(), size = comm->size();
  const size_t n = 1680;  // divisible by every tested world size
  std::vector<float> data = data_of(rank, n, 20), out(n);
  std::vector<size_t> equal(size, n / size);

  comm->allreduce(data.data(), n, Role::kGradient);
  comm->allreduce(data.data(), n, Role::kGradient);
  comm->reduce_scatter(data.data(), out.data(), equal, Role::kGradient);
  comm->allgather(data.data(), out.data(), equal, Role::kWeight);
  comm->broadcast(data.data(), n, 0, Role::kWeight);
  comm->alltoall(data.data(), equal, out.data(), equal, Role::kActivation);

  const CommStats& s = comm->stats();
  const uint64_t block = n / size * sizeof(float);
  EXPECT_EQ(s.at(Op::kAllreduce).calls, 2u);
  EXPECT_EQ(s.at(Op::kAllreduce).raw_bytes, 2 * 2 * (size - 1) * block);
  EXPECT_EQ(s.at(Op::kReduceScatter).raw_bytes, (size - 1) * block);
  EXPECT_EQ(s.at(Op::kAllgather).raw_bytes, (size - 1) * block);
  EXPECT_EQ(s.at(Op::kAlltoall).raw_bytes, (size - 1) * block);
  // The chain from root 0 ends on the last rank, which forwards nothing.
  EXPECT_EQ(s.at(Op::kBroadcast).raw_bytes, rank == size - 1 ? 0u : n * sizeof(float));
  for (int op = 0; op < kOpCount; ++op) {
    EXPECT_EQ(s.at(Op(op)).wire_bytes, s.at(Op(op)).raw_bytes) << to_string(Op(op));
    EXPECT_EQ(s.at(Op(op)).compressed_calls, 0u);
  }
  EXPECT_EQ(s.total().calls, 6u);
  EXPECT_DOUBLE_EQ(s.total().ratio(), 1.0);
}

// The identity codec moves the same floats plus a frame and a header per
// chunk message; the number of messages per call is bounded by the ring.
TEST(CommunicatorStats, IdentityWireBytesAreRawPlusFraming) {
  Policy identity(everything_through(compress::CodecSpec("identity"), 1 << 20));
  auto comm = make_comm(&identity);
  const int rank = comm->rank(), size = comm->size();
  const size_t n = 1680;
  std::vector<float> data = data_of(rank, n, 21), out(n);
  std::vector<size_t> equal(size, n / size);
  const uint64_t block = n / size * sizeof(float);

  comm->allreduce(data.data(), n, Role::kGradient);
  comm->allgather(data.data(), out.data(), equal, Role::kWeight);
  if (rank % 2 == 0 && rank + 1 < size) comm->send(data.data(), n, rank + 1, 3, Role::kActivation);
  if (rank % 2 == 1) comm->recv(out.data(), n, rank - 1, 3, Role::kActivation);

  const CommStats& s = comm->stats();
  const OpCounters& ar = s.at(Op::kAllreduce);
  EXPECT_EQ(ar.calls, 1u);
  EXPECT_EQ(ar.compressed_calls, 1u);
  EXPECT_EQ(ar.raw_bytes, 2 * (size - 1) * block);
  // One single-chunk message per ring hop: 2(N-1) of them.
  EXPECT_EQ(ar.wire_bytes, ar.raw_bytes + 2 * (size - 1) * kFrameAndHeader);
  const OpCounters& ag = s.at(Op::kAllgather);
  EXPECT_EQ(ag.raw_bytes, (size - 1) * block);
  EXPECT_EQ(ag.wire_bytes, ag.raw_bytes + (size - 1) * kFrameAndHeader);
  const OpCounters& p2p = s.at(Op::kSendRecv);
  const bool sender = rank % 2 == 0 && rank + 1 < size;
  EXPECT_EQ(p2p.calls, sender ? 1u : 0u);
  EXPECT_EQ(p2p.raw_bytes, sender ? n * sizeof(float) : 0u);
  EXPECT_EQ(p2p.wire_bytes, sender ? n * sizeof(float) + kFrameAndHeader : 0u);
  EXPECT_GT(ar.seconds, 0.0);
  EXPECT_EQ(ar.error_samples, 0u);  // lossless: nothing to sample
}

TEST(CommunicatorStats, MpcOnSmoothDataPutsFewerBytesOnTheWire) {
  if (!have_codec("mpc")) GTEST_SKIP() << "mpc is not registered in the codec registry yet";
  Policy mpc(everything_through(compress::CodecSpec("mpc"), 1 << 20));
  auto comm = make_comm(&mpc);
  const int rank = comm->rank(), size = comm->size();
  const size_t n = 1 << 16;
  std::vector<float> data = smooth_of(rank, n), out(n);
  std::vector<size_t> equal(size, n / size);
  comm->allgather(data.data(), out.data(), equal, Role::kActivation);
  comm->broadcast(data.data(), n, 0, Role::kActivation);
  const OpCounters& ag = comm->stats().at(Op::kAllgather);
  EXPECT_EQ(ag.compressed_calls, 1u);
  EXPECT_LT(ag.wire_bytes, ag.raw_bytes);
  EXPECT_GT(ag.ratio(), 1.2);
  const OpCounters& bc = comm->stats().at(Op::kBroadcast);
  if (rank != size - 1) EXPECT_LT(bc.wire_bytes, bc.raw_bytes);
  EXPECT_GT(comm->stats().total().encode_seconds, 0.0);
}

TEST(CommunicatorStats, ErrorIsSampledOnEveryKthLossyCall) {
  if (!have_codec("zfp")) GTEST_SKIP() << "zfp is not registered in the codec registry yet";
  PolicyConfig config =
      everything_through(compress::CodecSpec("zfp", {{"mode", "rate"}, {"rate", "12"}}), 1 << 20);
  config.error_sample_rate = 0.5;  // every 2nd lossy call: calls 1, 3, 5 of each op
  Policy zfp(config);
  auto comm = make_comm(&zfp);
  const int rank = comm->rank();
  const size_t n = 4096;
  for (int call = 0; call < 5; ++call) {
    std::vector<float> data = smooth_of(rank + call, n);
    comm->allreduce(data.data(), n, Role::kGradient);
  }
  const OpCounters& ar = comm->stats().at(Op::kAllreduce);
  EXPECT_EQ(ar.compressed_calls, 5u);
  EXPECT_EQ(ar.error_samples, 3u);
  // zfp at 12 bits per value on smooth data: small but not zero.
  EXPECT_GT(ar.mean_error(), 0.0);
  EXPECT_LT(ar.mean_error(), 1e-2);
  EXPECT_NE(comm->stats().to_json().find("\"rel_error\""), std::string::npos);
}

// One rank's NaN makes zfp (nonfinite: raw) send every ring chunk that
// carries it raw; the group's stats count those chunks, and the NaN arrives.
TEST(CommunicatorStats, ChunksSentRawBecauseOfNaNAreCounted) {
  if (!have_codec("zfp")) GTEST_SKIP() << "zfp is not registered in the codec registry yet";
  Policy zfp(
      everything_through(compress::CodecSpec("zfp", {{"mode", "rate"}, {"rate", "12"}}), 1 << 20));
  auto comm = make_comm(&zfp);
  const int rank = comm->rank();
  const size_t n = 4096;
  std::vector<float> finite = smooth_of(rank, n);
  comm->allreduce(finite.data(), n, Role::kGradient);
  EXPECT_EQ(comm->stats().total().nonfinite_raw_chunks, 0u);

  std::vector<float> data = smooth_of(rank, n);
  if (rank == 0) data[5] = std::nanf("");
  comm->allreduce(data.data(), n, Role::kGradient);
  EXPECT_TRUE(std::isnan(data[5])) << "the NaN must arrive, not be compressed away";
  EXPECT_TRUE(std::isfinite(data[n - 1]));
  const uint64_t mine = comm->stats().at(Op::kAllreduce).nonfinite_raw_chunks;
  unsigned long long everyone = 0, local = mine;
  MPI_Allreduce(&local, &everyone, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (comm->size() > 1) EXPECT_GT(everyone, 0u);
  EXPECT_NE(comm->stats().to_json().find("\"nonfinite_raw_chunks\":" + std::to_string(mine)),
            std::string::npos)
      << comm->stats().to_json();
}

TEST(Communicator, ErrorFeedbackKeepsResidualsPerBufferKey) {
  if (!have_codec("zfp")) GTEST_SKIP() << "zfp is not registered in the codec registry yet";
  PolicyConfig config =
      everything_through(compress::CodecSpec("zfp", {{"mode", "rate"}, {"rate", "8"}}), 1 << 20);
  config.rules[0].error_feedback = true;
  Policy zfp(config);
  auto comm = make_comm(&zfp);
  const PolicySlice::Route& route = comm->policy()->routes().at(0);
  ASSERT_NE(route.feedback, nullptr);
  // Two buffers of different sizes, each under its own key.
  std::vector<float> a = data_of(comm->rank(), 4096, 40), b = data_of(comm->rank(), 1000, 41);
  comm->allreduce(a.data(), a.size(), Role::kGradient, 1);
  size_t after_a = route.feedback->residuals().size();
  EXPECT_GT(after_a, 0u);
  comm->allreduce(b.data(), b.size(), Role::kGradient, 2);
  EXPECT_GT(route.feedback->residuals().size(), after_a);
  // The same key again reuses its residuals instead of adding new ones.
  size_t after_b = route.feedback->residuals().size();
  comm->allreduce(a.data(), a.size(), Role::kGradient, 1);
  EXPECT_EQ(route.feedback->residuals().size(), after_b);
}

TEST(CommunicatorStats, SmallMessagesStayPlainUnderTheDefaultMinBytes) {
  PolicyConfig config;
  PolicyRule rule;  // min_bytes left to the policy's 64 KiB
  rule.codec = compress::CodecSpec("identity");
  config.rules.push_back(rule);
  Policy policy(config);
  auto comm = make_comm(&policy);
  std::vector<float> small(16383, 1.0f), large(16384, 1.0f);
  comm->allreduce(small.data(), small.size(), Role::kGradient);
  EXPECT_EQ(comm->stats().at(Op::kAllreduce).compressed_calls, 0u);
  comm->allreduce(large.data(), large.size(), Role::kGradient);
  EXPECT_EQ(comm->stats().at(Op::kAllreduce).compressed_calls, 1u);
  EXPECT_EQ(large[0], float(comm->size()));
}

// Alltoall ranks disagree on their own sizes; they must still agree on the
// route when a rule's size bound falls between them.
TEST(Communicator, AlltoallAgreesOnTheRouteWhenSizesDifferAcrossRanks) {
  PolicyConfig config;
  PolicyRule rule;
  rule.match.min_bytes = 4096;
  rule.codec = compress::CodecSpec("identity");
  config.rules.push_back(rule);
  Policy policy(config);
  auto comm = make_comm(&policy);
  const int rank = comm->rank(), size = comm->size();
  // Rank 0 sends 2048 floats to everyone, the others 1 float each.
  auto count_from = [&](int r) { return r == 0 ? size_t(2048) : size_t(1); };
  std::vector<size_t> send_counts(size, count_from(rank)), recv_counts(size);
  for (int r = 0; r < size; ++r) recv_counts[r] = count_from(r);
  auto in = data_of(rank, count_from(rank) * size, 30);
  std::vector<float> out(std::accumulate(recv_counts.begin(), recv_counts.end(), size_t(0)));
  comm->alltoall(in.data(), send_counts, out.data(), recv_counts, Role::kActivation);
  size_t offset = 0;
  for (int r = 0; r < size; ++r) {
    auto theirs = data_of(r, count_from(r) * size, 30);
    for (size_t i = 0; i < count_from(r); ++i)
      ASSERT_EQ(out[offset + i], theirs[rank * count_from(r) + i]) << "from rank " << r;
    offset += count_from(r);
  }
  EXPECT_EQ(comm->stats().at(Op::kAlltoall).compressed_calls, 1u);
}

TEST(Communicator, PlainRecvOfAnotherSizeNamesBothSizes) {
  auto comm = make_comm(nullptr);
  const int rank = comm->rank();
  std::vector<float> five(5, 2.0f), seven(7);
  if (rank == 0) comm->send(five.data(), 5, 1, 4, Role::kActivation);
  if (rank == 1) {
    try {
      comm->recv(seven.data(), 7, 0, 4, Role::kActivation);
      ADD_FAILURE() << "expected an error";
    } catch (const std::runtime_error& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("expected 7 floats"), std::string::npos) << what;
      EXPECT_NE(what.find("5 floats"), std::string::npos) << what;
    }
  }
}

TEST(Communicator, RejectsTheSliceOfAnotherGroupAndBadPeers) {
  Policy none;
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  try {
    Communicator wrong(comm, GroupKind::kTp, std::make_unique<PolicySlice>(none, GroupKind::kDp));
    ADD_FAILURE() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("policy slice of group dp"), std::string::npos);
    MPI_Comm_free(&comm);
  }
  auto world = make_comm(&none);
  std::vector<float> x(4);
  EXPECT_THROW(world->broadcast(x.data(), 4, world->size(), Role::kWeight), std::invalid_argument);
  EXPECT_THROW(world->send(x.data(), 4, -1, 0, Role::kWeight), std::invalid_argument);
}

}  // namespace
}  // namespace cmpi::comm
