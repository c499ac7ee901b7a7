// mismatch_probe <op> <field>: runs one compressed operation in which the
// last rank disagrees with the others about the element count (field
// "count") or the codec (field "codec"), and shows that this ends in an
// error naming the field rather than a hang or a wrong result.
//
// A rank that detects the mismatch prints
//   "mismatch detected on rank R: field '<field>': <message>"
// and aborts the job (MPI_Abort, exit code 2), which is what an application
// must do after a failed collective. If the operation completes everywhere,
// rank 0 prints "no mismatch detected" and the probe exits 0. CTest runs it
// under mpirun with a timeout and requires the message and a nonzero exit.
//
// ops: send, allgather, reduce_scatter, allreduce, broadcast, alltoall, halo
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm/algorithms/compressed_collectives.h"
#include "comm/algorithms/transfer_error.h"
#include "compress/codec_registry.h"

namespace {

using cmpi::comm::CompressedContext;

// Large enough that chunks go by rendezvous: a sender whose receiver failed
// would block forever if the error were not fatal for the job.
constexpr size_t kElements = 200003;
constexpr size_t kChunk = 50000;

// A codec other than identity, whichever of them this build has.
std::unique_ptr<cmpi::compress::Codec> other_codec(const cmpi::compress::CodecRegistry& reg) {
  for (const char* name : {"mpc", "zfp", "fp16"})
    if (reg.contains(name)) return reg.create(cmpi::compress::CodecSpec(name));
  return nullptr;
}

void run(const std::string& op, CompressedContext& ctx, size_t n) {
  const int me = ctx.rank, ranks = ctx.size;
  std::vector<float> in(n * ranks, 0.5f), out(n * ranks + ranks);
  std::vector<size_t> counts(ranks, n);
  if (op == "send") {
    if (me == 0) cmpi::comm::compressed_send(ctx, in.data(), n, ranks - 1);
    if (me == ranks - 1) cmpi::comm::compressed_recv(ctx, out.data(), n, 0);
  } else if (op == "allgather") {
    cmpi::comm::ring_allgather(ctx, in.data(), out.data(), counts);
  } else if (op == "reduce_scatter") {
    cmpi::comm::ring_reduce_scatter(ctx, in.data(), out.data(), counts);
  } else if (op == "allreduce") {
    cmpi::comm::ring_allreduce(ctx, in.data(), n);
  } else if (op == "broadcast") {
    cmpi::comm::chain_broadcast(ctx, in.data(), n, 0);
  } else if (op == "alltoall") {
    cmpi::comm::compressed_alltoall(ctx, in.data(), counts, out.data(), counts);
  } else if (op == "halo") {
    cmpi::comm::HaloBuffers b;
    b.send_lo = b.send_hi = in.data();
    b.recv_lo = out.data();
    b.recv_hi = out.data() + n;
    b.send_lo_count = b.send_hi_count = b.recv_lo_count = b.recv_hi_count = n;
    cmpi::comm::halo_exchange(ctx, b);
  } else {
    throw std::invalid_argument("unknown op '" + op + "'");
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 3 || (std::strcmp(argv[2], "count") != 0 && std::strcmp(argv[2], "codec") != 0)) {
    if (rank == 0) std::fprintf(stderr, "usage: mismatch_probe <op> count|codec\n");
    MPI_Abort(MPI_COMM_WORLD, 64);
  }
  const std::string op = argv[1], field = argv[2];
  const bool odd_one = rank == size - 1;

  auto registry = cmpi::compress::CodecRegistry::with_builtin_codecs();
  auto identity = registry.create(cmpi::compress::CodecSpec("identity"));
  auto other = other_codec(registry);
  if (!other) {
    if (rank == 0) std::fprintf(stderr, "no codec besides identity is registered\n");
    MPI_Abort(MPI_COMM_WORLD, 65);
  }
  CompressedContext ctx;
  ctx.comm = MPI_COMM_WORLD;
  ctx.rank = rank;
  ctx.size = size;
  ctx.group = cmpi::comm::GroupKind::kWorld;
  ctx.codec = (field == "codec" && odd_one) ? other.get() : identity.get();
  ctx.chunk_elems = kChunk;
  ctx.tag = 3;
  const size_t n = (field == "count" && odd_one) ? kElements + 1 : kElements;
  try {
    run(op, ctx, n);
  } catch (const cmpi::comm::TransferError& e) {
    std::fprintf(stderr, "mismatch detected on rank %d: field '%s': %s\n", rank, e.field().c_str(),
                 e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 2);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected error on rank %d: %s\n", rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::printf("no mismatch detected\n");
  MPI_Finalize();
  return 0;
}
