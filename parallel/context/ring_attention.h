// Causal attention over a sequence split across the ranks of a context
// group (ContextShard's balanced chunks), as a ring: every rank keeps its own
// queries and passes key/value blocks to the next rank while it attends to
// the block it holds, so after N - 1 hops each rank has seen every key.
//
// Forward, ring step s = 0 .. N-1: this rank holds the keys and values of
// rank r - s (mod N) and posts their send to r + 1 and the receive of the
// next block from r - 1 before computing, so the transfer overlaps the
// block's arithmetic. For each pair (its query chunk a, the block's key
// chunk b, global chunk indices): b < a attends in full, b = a under the
// causal mask, b > a is skipped (never computed). Partial results merge with
// the online softmax of the blocked attention (models/blocked_attention.h):
// running row maximum, sum of exp(s - max) and output, rescaled as the
// maximum grows. It saves q, k, v, the output and the rows' log-sum-exp.
//
// Backward walks the same steps: the key/value blocks travel the ring again
// (prefetched one step ahead), and with each block travel float32
// accumulators of its key and value gradients: rank r adds its queries'
// contributions (dk_b += dsᵀ q_a, dv_b += P̃ᵀ dO_a) and passes them on, so
// that after N hops each rank receives the full gradients of its own keys
// and values. Its query gradient stays home (dq_a += ds k_b).
//
// Keys and values travel in the compute dtype (bfloat16 and half as 16-bit
// words), as role activation; the gradient accumulators in float32, as role
// activation_grad; both through the cp group's policy. Grouped-query
// attention passes the key/value heads only and widens them to the query
// heads per block. Arithmetic in float32, the output rounded to the inputs'
// dtype once. Dropout masks are drawn per (step, pair) from `generator` in a
// fixed order; backward restores the generator's state and draws the same.
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "comm/communicator.h"
#include "parallel/context/context_shard.h"

namespace cmpi::parallel {

struct RingAttentionOptions {
  int64_t query_group = 1;  // query heads per key/value head
  double dropout = 0.0;     // acts only while training
  bool training = false;
  uint64_t buffer_key = 0;  // keys: buffer_key, activation gradients: buffer_key + 1
};

// q [B, heads, T/N, d], k and v [B, kv heads, T/N, d]: this rank's local
// sequence (shard.take's order), q and k already turned by their global
// rotary positions. Returns [B, heads, T/N, d] in q's dtype. Collective over
// `cp` (whose size and rank must be the shard's), forward and backward.
torch::Tensor ring_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             comm::Communicator& cp, const ContextShard& shard,
                             const RingAttentionOptions& options, at::Generator generator);

}  // namespace cmpi::parallel
