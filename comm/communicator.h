// Communicator: one MPI communicator of the process grid (dp, tp, pp, sp,
// zero or world) with its slice of the compression policy and the statistics
// of everything it moved. Operations work on float buffers and name the Role
// of what they move; each asks the policy slice for a route (one table lookup
// for a `none` policy) and runs either the plain MPI operation or the
// compressed algorithm of comm/algorithms/. Counts are in elements; buffers
// larger than INT_MAX elements are rejected on the plain path.
//
// Every rank of the group must call the same collective with matching sizes;
// all ranks then take the same route, because they ask the same policy about
// the same (op, role, bytes). Alltoall and halo exchange, where ranks may
// hold different sizes, first agree on the largest one (one small allreduce)
// when the policy's answer for them depends on the size at all. A size
// mismatch aborts in MPI (plain path) or raises a TransferError naming the
// peer and the field (compressed path); either way the job must end.
//
// Locality: the communicator learns at construction which node each of its
// ranks sits on (MPI_COMM_TYPE_SHARED, or a node id the caller gives). A
// collective is inter-node when the group spans more than one node, so every
// rank asks the policy the same question; a point-to-point message is
// inter-node when its two ranks sit on different nodes (both ends agree).
// Stats count the wire bytes of each kind (OpCounters::inter_wire_bytes).
//
// Error feedback keeps a residual per buffer_key (default 0): callers that
// sync several distinct buffers through a lossy rule with error feedback
// give each its own key.
//
// One dispatch: every operation exists once, on buffers whose BufferKind
// (comm/element_type.h) says what their elements are (float32, or bf16/fp16
// held as 16-bit words) and where they live (host, or the attached device).
// Each call goes through the same path (Communicator::dispatch): watched
// (comm/watchdog.h), routed by the policy on its real bytes and word type,
// seen by preset auto, accounted once; then the transport of its memory
// moves the bytes. Host memory: MPI, plain or through the compressed
// algorithms, 16-bit words staged through float scratch where a codec needs
// floats (communicator_words16.cpp). Device memory: the staged device
// collectives (comm/device/, communicator_device.cpp). The typed overloads
// (float, 16-bit words with a WordType, a MemoryKind first) are thin
// forwards to the one form.
//
// Device buffers: MemoryKind::kDevice pointers of the device attached with
// attach_device take the same policy's route to the staged device
// collectives. kHost is the host call, so code can pass its buffers' kind
// through.
//
// Control calls (control_allreduce, control_gather; communicator_control.cpp):
// the run's own small agreements (flags, counts, records) on the same group,
// exact, never routed by the policy and never counted in stats().
//
// 16-bit words: bf16 or fp16 values moved as 2-byte words: the policy is
// asked about their real bytes, stats count 2 bytes per element, and the
// route's codec decides how they travel (raw words; mpc on the words
// themselves; other codecs on chunk-sized pieces widened to float and
// rounded back).
#pragma once

#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

#include "comm/adaptive_policy.h"
#include "comm/algorithms/compressed_collectives.h"
#include "comm/block_sparse_calibration.h"
#include "comm/call_spec.h"
#include "comm/comm_stats.h"
#include "comm/element_type.h"
#include "comm/group_kind.h"
#include "comm/memory_kind.h"
#include "comm/policy.h"
#include "compress/cuda/device.h"
#include "compress/word_type.h"

namespace cmpi::comm {

namespace device {
class DeviceCollectives;
}
class CallRecord;

using compress::WordType;

// The reductions of the Communicator's control calls (control_allreduce).
// kBitOr takes integer elements only.
enum class ControlReduce { kSum, kMax, kMin, kBitOr };
const char* to_string(ControlReduce op);  // "sum", "max", "min", "bit_or"

class Communicator {
 public:
  // A pending isend/irecv. Must be completed with Communicator::wait before
  // the buffers it refers to are reused, and before the Communicator goes.
  // Destroying a pending request abandons it without blocking (what is
  // still posted is cancelled or freed): that is for error paths, after
  // which the job is expected to end; the data it carried is lost.
  class Request {
   public:
    // Out of line: Pending is complete only in communicator.cpp.
    Request();
    Request(Request&&) noexcept;
    Request& operator=(Request&& other) noexcept;
    ~Request();
    bool pending() const { return op_ != nullptr; }

    struct Pending;  // defined in communicator.cpp

   private:
    friend class Communicator;
    std::unique_ptr<Pending> op_;
  };

  // Node id meaning "ask MPI" (MPI_COMM_TYPE_SHARED over the communicator).
  static constexpr int kDetectNode = -1;

  // Takes ownership of `comm` (freed on destruction) unless it is
  // MPI_COMM_WORLD. Without a policy every message travels raw. Collective
  // over `comm` (duplicates it for the compressed algorithms' own traffic,
  // and gathers every rank's node id; `node` >= 0 names this rank's node,
  // the same number on every rank of that node).
  Communicator(MPI_Comm comm, GroupKind kind);
  Communicator(MPI_Comm comm, GroupKind kind, std::unique_ptr<PolicySlice> policy,
               int node = kDetectNode);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  GroupKind kind() const { return kind_; }
  MPI_Comm mpi() const { return comm_; }
  // nullptr when built without a policy.
  const PolicySlice* policy() const { return policy_.get(); }
  // The group's error-feedback residuals and codec generators
  // (PolicySlice::codec_state), empty without a policy; and putting them back
  // (returns the saved keys no codec of this group took). Only between
  // operations: not while a nonblocking one is in flight.
  CodecState codec_state() const { return policy_ ? policy_->codec_state() : CodecState{}; }
  std::vector<std::string> restore_codec_state(const CodecState& state);
  // Node of each rank of the group (ids are comparable, not dense).
  int node_of(int rank) const { return node_of_rank_[size_t(rank)]; }
  // Whether the group's ranks sit on more than one node.
  bool spans_nodes() const { return spans_nodes_; }
  // The locality of this group's collectives, and of a message to/from `peer`.
  Locality collective_locality() const {
    return spans_nodes_ ? Locality::kInter : Locality::kIntra;
  }
  Locality peer_locality(int peer) const {
    return node_of(peer) == node_of(rank_) ? Locality::kIntra : Locality::kInter;
  }

  // ------------------------------------------------------- the one form
  // Every operation once, on buffers of any BufferKind (see the top of this
  // file); counts are in elements of that kind. Each host element type has
  // the operations its typed overloads below have; device memory takes
  // float32 collectives and blocking send/recv. Other combinations are
  // refused (std::invalid_argument naming the group and the operation).

  // data[0..n) = sum over ranks, in place.
  void allreduce(void* data, size_t n, BufferKind buffers, Role role, uint64_t buffer_key = 0);
  // out[0..counts[rank]) = sum over ranks of in's block `rank`; in holds
  // sum(counts) elements laid out block after block.
  void reduce_scatter(const void* in, void* out, const std::vector<size_t>& counts,
                      BufferKind buffers, Role role, uint64_t buffer_key = 0);
  // out = concatenation of every rank's in[0..counts[r]); counts may differ per rank.
  void allgather(const void* in, void* out, const std::vector<size_t>& counts, BufferKind buffers,
                 Role role, uint64_t buffer_key = 0);
  // data[0..n) on every rank = root's data.
  void broadcast(void* data, size_t n, int root, BufferKind buffers, Role role,
                 uint64_t buffer_key = 0);
  // Block j of in (send_counts[j] elements) goes to rank j; block i of out
  // (recv_counts[i]) comes from rank i.
  void alltoall(const void* in, const std::vector<size_t>& send_counts, void* out,
                const std::vector<size_t>& recv_counts, BufferKind buffers, Role role,
                uint64_t buffer_key = 0);
  // Tags must be >= 0. A message sent with send/isend/sendrecv is received
  // with recv/irecv/sendrecv of the same n, BufferKind and role.
  void send(const void* data, size_t n, BufferKind buffers, int dest, int tag, Role role,
            uint64_t buffer_key = 0);
  void recv(void* data, size_t n, BufferKind buffers, int source, int tag, Role role);
  // Nonblocking forms (host memory). A compressed isend encodes everything
  // before it returns (the transfers run in the background); a compressed
  // irecv receives and decodes inside wait().
  Request isend(const void* data, size_t n, BufferKind buffers, int dest, int tag, Role role,
                uint64_t buffer_key = 0);
  Request irecv(void* data, size_t n, BufferKind buffers, int source, int tag, Role role);

  // ------------------------------------------------------------ float32
  void allreduce(float* data, size_t n, Role role, uint64_t buffer_key = 0) {
    allreduce(data, n, BufferKind{}, role, buffer_key);
  }
  void reduce_scatter(const float* in, float* out, const std::vector<size_t>& counts, Role role,
                      uint64_t buffer_key = 0) {
    reduce_scatter(in, out, counts, BufferKind{}, role, buffer_key);
  }
  void allgather(const float* in, float* out, const std::vector<size_t>& counts, Role role,
                 uint64_t buffer_key = 0) {
    allgather(in, out, counts, BufferKind{}, role, buffer_key);
  }
  void broadcast(float* data, size_t n, int root, Role role, uint64_t buffer_key = 0) {
    broadcast(data, n, root, BufferKind{}, role, buffer_key);
  }
  void alltoall(const float* in, const std::vector<size_t>& send_counts, float* out,
                const std::vector<size_t>& recv_counts, Role role, uint64_t buffer_key = 0) {
    alltoall(in, send_counts, out, recv_counts, BufferKind{}, role, buffer_key);
  }
  void send(const float* data, size_t n, int dest, int tag, Role role, uint64_t buffer_key = 0) {
    send(data, n, BufferKind{}, dest, tag, role, buffer_key);
  }
  void recv(float* data, size_t n, int source, int tag, Role role) {
    recv(data, n, BufferKind{}, source, tag, role);
  }
  Request isend(const float* data, size_t n, int dest, int tag, Role role,
                uint64_t buffer_key = 0) {
    return isend(data, n, BufferKind{}, dest, tag, role, buffer_key);
  }
  Request irecv(float* data, size_t n, int source, int tag, Role role) {
    return irecv(data, n, BufferKind{}, source, tag, role);
  }
  // Exact sums for buffers that several groups hold copies of and must keep
  // bit-identical (communicator_exact.cpp): lossless whatever the policy
  // (which is not asked), in an order fixed by n and the group's size alone,
  // so that groups of the same size given the same inputs return the same
  // bits on every rank. Counted as plain calls of their op.
  void exact_allreduce(float* data, size_t n, uint64_t buffer_key = 0);
  void exact_reduce_scatter(const float* in, float* out, const std::vector<size_t>& counts,
                            uint64_t buffer_key = 0);
  // Sends to `dest` while receiving from `source` (no deadlock on rings).
  void sendrecv(const float* send_data, size_t send_n, int dest, float* recv_data, size_t recv_n,
                int source, int tag, Role role, uint64_t buffer_key = 0);
  void wait(Request& request);
  // Neighbour exchange along the line of ranks 0..size-1 (not periodic), or
  // between the peers HaloBuffers names (one row or column of a tile grid):
  // see HaloBuffers in comm/algorithms/compressed_collectives.h. Every rank of
  // the group calls it, with empty buffers if it has nothing to exchange. The policy sees
  // op `halo` and the largest single message of the call over the group.
  void halo_exchange(const HaloBuffers& buffers, Role role = Role::kHalo, uint64_t buffer_key = 0);
  void barrier();

  // ----------------------------------------------------------- 16-bit words
  // The calls above on bf16 or fp16 values held as their 16-bit patterns
  // (`type` says which; kFloat32 is refused: use the float overloads). Same
  // rules for counts, tags and matching; a 16-bit send is received by a
  // 16-bit recv of the same type. How the route's codec carries the words
  // (communicator_words16.cpp):
  //   no codec, identity, or the cast to this same type: raw words through
  //     MPI; an allreduce or reduce-scatter sums in float and rounds to the
  //     16-bit type once per reduction step (with two ranks: a + b rounded
  //     once, what widening both to float and rounding the sum gives);
  //   mpc: lossless on the words themselves, two words per 32-bit MPC word,
  //     except allreduce and reduce-scatter, which sum (next line);
  //   any other codec (zfp, casts, quantizers, sparsifiers): pieces of a few
  //     chunks widened to float (exact) in a scratch buffer of that size,
  //     run through the float algorithm, decoded and rounded back;
  //   block_sparse: refused (std::invalid_argument naming the group, the
  //     operation, the role and the rule), as it has no 16-bit path.
  void allreduce(uint16_t* data, size_t n, WordType type, Role role, uint64_t buffer_key = 0) {
    allreduce(data, n, words16(type, "allreduce"), role, buffer_key);
  }
  void reduce_scatter(const uint16_t* in, uint16_t* out, const std::vector<size_t>& counts,
                      WordType type, Role role, uint64_t buffer_key = 0) {
    reduce_scatter(in, out, counts, words16(type, "reduce_scatter"), role, buffer_key);
  }
  void allgather(const uint16_t* in, uint16_t* out, const std::vector<size_t>& counts,
                 WordType type, Role role, uint64_t buffer_key = 0) {
    allgather(in, out, counts, words16(type, "allgather"), role, buffer_key);
  }
  void send(const uint16_t* data, size_t n, WordType type, int dest, int tag, Role role,
            uint64_t buffer_key = 0) {
    send(data, n, words16(type, "send"), dest, tag, role, buffer_key);
  }
  void recv(uint16_t* data, size_t n, WordType type, int source, int tag, Role role) {
    recv(data, n, words16(type, "recv"), source, tag, role);
  }
  Request isend(const uint16_t* data, size_t n, WordType type, int dest, int tag, Role role,
                uint64_t buffer_key = 0) {
    return isend(data, n, words16(type, "isend"), dest, tag, role, buffer_key);
  }
  Request irecv(uint16_t* data, size_t n, WordType type, int source, int tag, Role role) {
    return irecv(data, n, words16(type, "irecv"), source, tag, role);
  }

  // Crossover densities calibrated so far for `select: auto` block-sparse
  // allreduces (comm/block_sparse_calibration.h).
  const BlockSparseCalibration& block_sparse_calibration() const {
    return block_sparse_calibration_;
  }
  BlockSparseCalibration& block_sparse_calibration() { return block_sparse_calibration_; }

  // ---------------------------------------------------------- device buffers
  // Attaches the device whose memory MemoryKind::kDevice calls take, and the
  // stream of that device on which the caller produces their inputs and
  // reads their outputs. Collective over the group (duplicates the
  // communicator for the device traffic); once per communicator; the device
  // must outlive the communicator. Without it nothing device-related is
  // allocated and the host calls pay nothing.
  void attach_device(compress::cuda::Device& device, compress::cuda::StreamId stream);
  bool has_device() const { return device_routes_ != nullptr; }

  // The host calls above on buffers of `memory`. A kDevice call asks the
  // policy the same question as the host call (op, role, bytes, locality)
  // and runs the matching device codec of the route's codec (zfp rate, mpc,
  // fp16, bf16, sign), chunked at the route's chunk size, or the plain staged
  // collective where the route is raw, has error feedback, or its codec has
  // no device implementation. It returns once this rank's transfers are
  // done; the results are ready in the order of the attached stream. It
  // throws std::logic_error, naming the group and the operation, when no
  // device is attached. A device send is received by a device recv.
  void allreduce(MemoryKind memory, float* data, size_t n, Role role) {
    allreduce(data, n, BufferKind{{}, memory}, role);
  }
  void reduce_scatter(MemoryKind memory, const float* in, float* out,
                      const std::vector<size_t>& counts, Role role) {
    reduce_scatter(in, out, counts, BufferKind{{}, memory}, role);
  }
  void allgather(MemoryKind memory, const float* in, float* out, const std::vector<size_t>& counts,
                 Role role) {
    allgather(in, out, counts, BufferKind{{}, memory}, role);
  }
  void broadcast(MemoryKind memory, float* data, size_t n, int root, Role role) {
    broadcast(data, n, root, BufferKind{{}, memory}, role);
  }
  void alltoall(MemoryKind memory, const float* in, const std::vector<size_t>& send_counts,
                float* out, const std::vector<size_t>& recv_counts, Role role) {
    alltoall(in, send_counts, out, recv_counts, BufferKind{{}, memory}, role);
  }
  void send(MemoryKind memory, const float* data, size_t n, int dest, int tag, Role role) {
    send(data, n, BufferKind{{}, memory}, dest, tag, role);
  }
  void recv(MemoryKind memory, float* data, size_t n, int source, int tag, Role role) {
    recv(data, n, BufferKind{{}, memory}, source, tag, role);
  }

  // ---------------------------------------------------------- control traffic
  // Small messages that steer the run rather than train it: whether any
  // rank's step went non-finite and every rank's view of it, whether every
  // background checkpoint writer is done, the end-of-run totals
  // (communicator_control.cpp). They are kept apart from the data
  // operations above because they are tiny, must arrive exact (flags,
  // counts, checksums) and are no part of a step's data traffic: the policy
  // is never asked (no codec, no preset auto), and nothing is added to
  // stats(), so the per-op statistics, the summary's wire bytes and the
  // compression ratios describe the training's data alone. Each is one
  // plain MPI collective, watched as every blocking call is (a deadline
  // naming the group). Collective over the group: every rank calls it with
  // the same n (or bytes), op and root. Arguments are checked first, the
  // same on every rank, so a refused call throws everywhere instead of
  // hanging: n beyond INT_MAX (std::length_error), a null buffer, a root
  // outside the group, kBitOr on doubles (std::invalid_argument naming the
  // group and the call).

  // data[0..n) = op over ranks, in place; exact (integers; doubles as MPI
  // reduces them, the same bits on every rank).
  void control_allreduce(int32_t* data, size_t n, ControlReduce op);
  void control_allreduce(int64_t* data, size_t n, ControlReduce op);
  void control_allreduce(uint64_t* data, size_t n, ControlReduce op);
  void control_allreduce(double* data, size_t n, ControlReduce op);
  // Every rank's `bytes` bytes at `own`, at `root` in rank order (size() *
  // bytes bytes); empty on the other ranks. `bytes` is the same on every rank.
  std::vector<std::byte> control_gather(const void* own, size_t bytes, int root);
  // The same for one trivially copyable record per rank: size() records at
  // root in rank order, none elsewhere.
  template <class T>
  std::vector<T> control_gather(const T& own, int root) {
    static_assert(std::is_trivially_copyable_v<T>, "control_gather copies records as bytes");
    const std::vector<std::byte> bytes = control_gather(&own, sizeof(T), root);
    std::vector<T> records(bytes.size() / sizeof(T));
    if (!records.empty()) std::memcpy(records.data(), bytes.data(), bytes.size());
    return records;
  }
  // How many control calls this communicator made (none of them in stats()).
  uint64_t control_calls() const { return control_calls_; }

  CommStats& stats() { return stats_; }
  const CommStats& stats() const { return stats_; }

  // Preset auto (comm/adaptive_policy.h): the step-boundary decision of this
  // group's adaptive routes. Collective over the group; every rank calls it
  // at the same point with the same step, between operations. Returns
  // nothing and communicates nothing when the policy has no adaptive rule
  // for this group. `previous_loss`: the training loss of step - 1, which
  // weighs each route's effect on convergence (AdaptivePolicy::decide).
  std::vector<AutoDecision> adapt(int64_t step, double previous_loss = kNoPreviousLoss);
  // nullptr when the group has no adaptive rule.
  AdaptivePolicy* adaptive() { return adaptive_.get(); }

 private:
  using Route = PolicySlice::Route;
  // The 16-bit calls' routing and staging (communicator_words16.cpp).
  struct Words16;
  friend struct Words16;

  // The route the policy gives a message (raw routes included), or nullptr.
  const Route* find_route(Op op, Role role, size_t bytes, Locality locality,
                          WordType word = WordType::kFloat32) const {
    return policy_ ? policy_->route(op, role, bytes, locality, word) : nullptr;
  }
  static const Route* compressing(const Route* route) {
    return route != nullptr && route->codec != nullptr ? route : nullptr;
  }

  // The compressing route for a message, or nullptr for the plain path.
  const Route* compressing_route(Op op, Role role, size_t bytes, Locality locality) const {
    return compressing(find_route(op, role, bytes, locality));
  }
  // For ops whose sizes may differ between ranks: the largest over the group
  // when the route depends on the size (one allreduce), else `local_bytes`.
  size_t agreed_bytes(Op op, Role role, size_t local_bytes);
  void check_counts(const std::vector<size_t>& counts, const char* op) const;
  void check_peer(int peer, const char* what, const char* op) const;
  CompressedContext context(const Route& route, Op op, MPI_Comm comm, int tag, uint64_t buffer_key);
  // Starts a compressed call's accounting and samples its error when due.
  void begin_compressed(const Route& route, Op op, uint64_t raw_bytes, const float* own,
                        size_t own_n);
  void sample_error(compress::Codec& codec, OpCounters& counters, const float* own, size_t n);
  int next_tag();
  // Whether a raw allreduce of n floats takes the plain ring.
  bool takes_plain_ring(size_t n) const;
  // The raw allreduce (plain ring or MPI_Allreduce); the ring charges
  // `counters`, the caller does the rest of the accounting.
  void raw_allreduce(float* data, size_t n, uint64_t buffer_key, OpCounters& counters);
  // The identity-framed ring of the exact sums (made on first use).
  const Route& exact_ring();
  // The compressing route after `route` (PolicySlice::route_after), or
  // nullptr for the plain path.
  const Route* compressing_route_after(const Route& route, Op op, Role role, size_t bytes,
                                       Locality locality) const {
    return compressing(policy_->route_after(route, op, role, bytes, locality));
  }
  // A block_sparse route: runs the block-sparse allreduce and returns true,
  // or returns false (nothing done) when `select: auto` finds the group's
  // density at or above the crossover calibrated against `fallback` (the
  // route taken then; nullptr: the raw allreduce).
  bool block_sparse_allreduce_if_cheaper(const Route& route, const Route* fallback, float* data,
                                         size_t n, uint64_t raw_bytes, uint64_t buffer_key);
  BlockSparseCosts measure_block_sparse_costs(const Route& route, const Route* fallback, size_t n);
  // A sparsifier route (topk, randomk, threshold, sidco): whether summing
  // its output block-sparse beats its ring, as measured once per size class
  // on this call's data (comm/block_sparse_calibration.h).
  bool sparsified_block_sparse_pays(const Route& route, const float* data, size_t n);
  // data[0..n) = its sparsified version (through `feedback` under `key`
  // when given), encode and decode seconds charged to `counters`.
  void sparsify(const Route& route, float* data, size_t n, compress::ErrorFeedback* feedback,
                uint64_t key, OpCounters& counters);
  // Sparsifies this rank's data through the route's feedback, then sums
  // the sparsified buffers exactly with the block-sparse allreduce.
  void sparsified_block_sparse_allreduce(const Route& route, float* data, size_t n,
                                         uint64_t raw_bytes, uint64_t buffer_key);
  // Seconds of run() on the slowest rank, best of two (prepare() untimed).
  double slowest_rank_seconds(const std::function<void()>& prepare,
                              const std::function<void()>& run);
  // ------------------------------------------------------- the dispatch
  // The one path of every call (communicator.cpp): watches it, asks the
  // policy (agreeing on the size first where ranks may differ), lets preset
  // auto probe and record it (host calls), and closes its accounting.
  // `body(found, record)` moves the bytes: `found` is the route the policy
  // gave (raw routes included; nullptr without a policy), `record` the
  // call's accounting, opened by the body once it knows its path.
  template <class Body>
  auto dispatch(const CallSpec& call, Body&& body);
  // The one implementation of the typed control_allreduce overloads
  // (communicator_control.cpp).
  template <class T>
  void control_allreduce_of(T* data, size_t n, ControlReduce op);
  // The BufferKind of a typed 16-bit call; refuses kFloat32, naming `operation`.
  BufferKind words16(WordType type, const char* operation) const;
  // Refuses what no transport carries: 16-bit words where `words_ok` is
  // false, device memory where `device_ok` is false.
  void check_buffers(const CallSpec& call, bool words_ok, bool device_ok) const;
  // A CallSpec of this group for `operation` (named "device <op>" on device memory).
  // Its locality is the collective's; a point-to-point call sets its peer's.
  CallSpec call_spec(const char* host_name, const char* device_name, Op op, Role role,
                     BufferKind buffers) const;

  // The host transport's plain path: MPI moves the elements as they are.
  void plain_allreduce(void* data, size_t n, ElementType element, uint64_t buffer_key,
                       CallRecord& record);
  void plain_recv(void* data, size_t n, ElementType element, int source, int tag,
                  OpCounters& counters);
  // Received bytes are counted by the sender; only time is added here.
  // The compressed float allreduce: block-sparse routes (with their
  // fallbacks, which may end raw), sparsified block-sparse sums, the ring.
  void compressed_float_allreduce(const Route& route, float* data, size_t n, Role role,
                                  uint64_t buffer_key, CallRecord& record);
  // A compressed float isend: every chunk encoded before it returns.
  Request compressed_float_isend(const Route& route, const float* data, size_t n, int dest, int tag,
                                 uint64_t buffer_key, CallRecord& record);
  // The plain halo exchange; lo and hi are MPI_PROC_NULL where there is no neighbour.
  void plain_halo_exchange(const HaloBuffers& buffers, int lo, int hi);

  // The device transport (communicator_device.cpp): runs `run` on the
  // attached device's collectives for the route `found`, on its stream.
  // `p2p_tag` >= 0 tags a send or receive (collectives use their own tag);
  // a receive (call.raw_bytes 0, call.op kSendRecv, is_receive) counts no
  // call: its sender does.
  void on_device(
      const CallSpec& call, const Route* found, CallRecord& record, int p2p_tag, bool is_receive,
      const std::function<void(device::DeviceCollectives&, compress::cuda::StreamId)>& run);
  // Refuses a device send or receive tag that is negative or beyond the
  // device tags' bound (communicator_device.cpp).
  void check_device_tag(const CallSpec& call, int tag) const;

  const std::vector<int>& mpi_counts(const std::vector<size_t>& counts, std::vector<int>& out);
  const std::vector<int>& mpi_displs(const std::vector<int>& counts, std::vector<int>& out);

  CommStats stats_;
  MPI_Comm comm_;
  MPI_Comm internal_ = MPI_COMM_NULL;  // compressed collectives and halos only
  GroupKind kind_;
  int rank_ = 0;
  int size_ = 1;
  std::unique_ptr<PolicySlice> policy_;
  std::unique_ptr<AdaptivePolicy> adaptive_;  // preset auto only
  // The identity-framed route of large raw allreduces (plain_ring_min_bytes).
  std::unique_ptr<compress::Codec> ring_codec_;
  Route plain_ring_;
  std::unique_ptr<compress::Codec> exact_codec_;  // exact_ring()'s identity codec
  Route exact_ring_;
  std::vector<int> node_of_rank_;
  bool spans_nodes_ = false;
  int tag_sequence_ = 0;
  uint64_t control_calls_ = 0;  // control_* calls, kept out of stats_
  std::array<uint64_t, kOpCount> lossy_calls_{};
  // Reused by the plain path so that it does not allocate per call.
  std::vector<int> send_counts_, recv_counts_, send_displs_, recv_displs_;
  std::vector<uint8_t> sample_payload_;
  std::vector<uint8_t> block_marks_;  // non-zero blocks of a block-sparse allreduce
  std::vector<uint8_t> sparsify_payload_;
  BlockSparseCalibration block_sparse_calibration_;
  std::vector<float> sample_decoded_;
  // The attached device, its communicator and its collectives per route
  // (communicator_device.cpp); null until attach_device. Declared last, so
  // that it goes first: its collectives still wait for their streams.
  struct DeviceRoutes;
  struct DeviceRoutesDeleter {
    void operator()(DeviceRoutes* routes) const;
  };
  std::unique_ptr<DeviceRoutes, DeviceRoutesDeleter> device_routes_;
};

// This rank's node: the lowest world rank among the ranks of `comm` that
// share its memory (MPI_COMM_TYPE_SHARED, or host names where the ranks'
// views of it disagree: comm/node_grouping.h), the same on all of them.
// Collective over `comm`.
int shared_memory_node(MPI_Comm comm);

// The bytes rank `rank` of `size` sends in a ring allreduce of n elements of
// word_bytes each (what CommStats counts as an allreduce's raw bytes).
uint64_t ring_allreduce_bytes(size_t n, int rank, int size, size_t word_bytes = sizeof(float));

// Checks n fits an MPI count; throws std::length_error naming the group otherwise.
int mpi_count(size_t n, GroupKind group);

}  // namespace cmpi::comm
