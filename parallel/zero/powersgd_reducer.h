// PowerSgdReducer: the data-parallel gradient sum of a bucket, with every
// gradient matrix replaced by a rank-r approximation (PowerSGD, Vogels,
// Karimireddy and Jaggi, NeurIPS 2019) so that only two thin factors cross
// the wire.
//
// Works as follows, per bucket and step, on each dp rank w with local
// gradient M_w (n x m; a tensor of higher rank is viewed as shape[0] x rest):
//   1. D_w = M_w + e_w                 (error feedback: what earlier steps lost)
//   2. P_w = D_w Q                     (Q: m x r, the same on every rank)
//   3. P = sum_w P_w                   (allreduce #1, together with the raw tensors)
//   4. P^ = orthonormal columns of P   (modified Gram-Schmidt; identical everywhere)
//   5. Q_w = D_w^T P^, e_w = D_w - P^ Q_w^T
//   6. Q = sum_w Q_w                   (allreduce #2)
//   7. result = P^ Q^T = P^ P^T sum_w D_w ; Q is kept for the next step (warm start)
// So sum_w e_w = sum_w D_w - result: what the approximation misses of the
// summed gradient is carried, not lost, and the sum of all results plus the
// residuals equals the sum of all gradients exactly (up to float rounding).
// A matrix of rank <= r is summed exactly. Tensors where low rank saves no
// bytes (1-D biases and LayerNorm weights, and r(n+m) >= nm) are summed raw,
// packed into allreduce #1, so a bucket costs two messages whatever it holds.
// The first `start_step` reductions of a bucket are one plain allreduce.
//
// Both allreduces go through the dp Communicator (role gradient, so CommStats
// counts them); afterwards this reducer adds to the allreduce counters' raw
// bytes what the full bucket would have cost, so their ratio() is the
// compression PowerSGD achieved on the wire, and its own arithmetic as codec
// time (encode: steps 1-2 and 4-5; decode: step 7), inside the counters'
// seconds as a codec's time is inside a compressed ring's.
//
// Non-finite values: if allreduce #1 returns NaN or infinity (every rank sees
// the same), the matrices' results are set to NaN (the optimizer then skips
// the step everywhere), their residuals are cleared and Q restarts; the
// second allreduce is skipped on every rank alike.
//
// Per-rank state: one residual per matrix (its size) and one Q (m x r). Not
// thread-safe; the optimizer calls it from one thread at a time (the comm
// thread with overlap).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/powersgd_settings.h"

namespace cmpi::comm {
class Communicator;
}

namespace cmpi::parallel {

// A tensor in the flat gradient buffer, viewed as rows x cols.
struct PowerSgdTensor {
  size_t offset = 0;  // flat offset of its first element
  size_t rows = 0;    // shape[0] (1 for a 1-D tensor)
  size_t cols = 0;    // numel / rows
  bool raw = false;   // summed raw whatever its shape (settings.raw_embeddings)
};

// Whether parameter `name` is an embedding table (token or position
// embedding, or an untied output head): the tensors settings.raw_embeddings
// keeps raw.
bool is_embedding_table(const std::string& name);

class PowerSgdReducer {
 public:
  struct Options {
    comm::PowerSgdSettings settings;
    // Tests: approximate matrices even where r(n+m) >= nm (r then clipped to
    // min(n, m)); the optimizer never sets it.
    bool low_rank_everywhere = false;
  };

  // tensors_of_bucket[b]: the tensors bucket b sums, each listed once over
  // all buckets and contiguous in the flat buffer within a bucket. Throws
  // std::invalid_argument for an empty tensor or a bad index.
  PowerSgdReducer(std::vector<PowerSgdTensor> tensors,
                  std::vector<std::vector<size_t>> tensors_of_bucket, Options options,
                  comm::Communicator& dp);

  // Sums bucket b's tensors over dp in place in `flat` (matrices as their
  // low-rank approximation). Collective over dp: every rank calls it for the
  // same buckets in the same order.
  void reduce_bucket(size_t bucket, float* flat);

  // Whether tensor t is approximated (false: summed raw).
  bool low_rank(size_t tensor) const { return rank_of_[tensor] != 0; }
  // Floats sent per step by allreduces #1 and #2 of bucket b (after start_step).
  size_t message_floats(size_t bucket) const;
  // Bytes of per-rank state (residuals and Q's).
  size_t state_bytes() const;
  // Residual of tensor t (rows x cols, row-major; empty when summed raw).
  const std::vector<float>& residual(size_t tensor) const { return residual_[tensor]; }
  // The Q tensor t's next reduction starts from (cols x r, row-major; empty
  // when summed raw): the same on every rank.
  const std::vector<float>& q(size_t tensor) const { return q_[tensor]; }

  // What a resumed run needs to continue bit for bit (a checkpoint holds it
  // per rank: checkpoint/rank_state.h): every tensor's residual and Q (empty
  // when summed raw), every bucket's reductions so far (start_step) and the
  // Q's drawn so far (the next reset's stream).
  struct State {
    std::vector<std::vector<float>> residuals, qs;
    std::vector<int64_t> reductions;
    uint64_t q_draws = 0;
  };
  State state() const { return {residual_, q_, reductions_, q_draws_}; }
  // Throws std::invalid_argument naming the tensor or count that does not
  // match this reducer (a state saved for other tensors or buckets).
  void restore(const State& state);

 private:
  void reduce_low_rank(size_t bucket, float* flat);
  void reset_q(size_t tensor);

  std::vector<PowerSgdTensor> tensors_;
  std::vector<std::vector<size_t>> tensors_of_bucket_;
  Options options_;
  comm::Communicator& dp_;
  std::vector<size_t> rank_of_;  // per tensor: r used, 0 when summed raw
  std::vector<std::vector<float>> residual_;
  std::vector<std::vector<float>> q_;  // cols x r, row-major
  std::vector<int64_t> reductions_;    // per bucket, so far
  uint64_t q_draws_ = 0;               // random Q's drawn so far (same on every rank)
  std::vector<float> p_message_;       // allreduce #1: raw tensors, then the P's
  std::vector<float> q_message_;       // allreduce #2: the Q's
};

}  // namespace cmpi::parallel
