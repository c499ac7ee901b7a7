// One custom autograd Function. Forward and backward visit the same
// (step, query chunk, key chunk) pairs in the same order, so the dropout
// masks that backward draws (from the generator state saved at forward) are
// forward's.
#include "parallel/context/ring_attention.h"

#include <cmath>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "parallel/host_staging.h"
#include "parallel/replayed_dropout.h"
#include "parallel/tensor_words.h"

namespace cmpi::parallel {
namespace {

using torch::autograd::variable_list;

// Tags of the ring's four messages; every cp rank sends them in the same
// order, so a tag per kind is enough to match them.
enum Tag : int { kKeys = 0, kValues = 1, kKeyGrads = 2, kValueGrads = 3 };

// A tensor on its way: the request and the buffer it reads or fills, which
// must live until the request is waited for.
struct Transfer {
  comm::Communicator::Request request;
  torch::Tensor buffer;
};

Transfer post_send(comm::Communicator& cp, const torch::Tensor& tensor, int dest, int tag,
                   comm::Role role, uint64_t key) {
  Transfer t;
  t.buffer = host_contiguous(tensor);  // a device's tensor travels from a host copy
  const size_t n = size_t(t.buffer.numel());
  if (t.buffer.scalar_type() == torch::kFloat)
    t.request = cp.isend(t.buffer.data_ptr<float>(), n, dest, tag, role, key);
  else
    t.request = cp.isend(words_of(t.buffer), n, word_type_of(t.buffer.scalar_type(), "ring send"),
                         dest, tag, role, key);
  return t;
}

Transfer post_recv(comm::Communicator& cp, const torch::Tensor& like, int source, int tag,
                   comm::Role role) {
  Transfer t;
  // Into host memory; the caller moves it to its device (on_device).
  t.buffer = torch::empty(
      like.sizes(), like.options().device(torch::kCPU).memory_format(at::MemoryFormat::Contiguous));
  const size_t n = size_t(t.buffer.numel());
  if (t.buffer.scalar_type() == torch::kFloat)
    t.request = cp.irecv(t.buffer.data_ptr<float>(), n, source, tag, role);
  else
    t.request = cp.irecv(words_of(t.buffer), n, word_type_of(t.buffer.scalar_type(), "ring recv"),
                         source, tag, role);
  return t;
}

// What a pair of chunks computes: the key chunk lies wholly before the
// query chunk (every key visible), is the same chunk (causal mask), or lies
// after it (nothing visible: skipped).
enum class PairKind { kFull, kDiagonal, kSkip };

PairKind kind_of(int64_t query_chunk, int64_t key_chunk) {
  if (key_chunk < query_chunk) return PairKind::kFull;
  return key_chunk == query_chunk ? PairKind::kDiagonal : PairKind::kSkip;
}

// The ring: this rank's neighbours and, at step s, whose block it holds.
struct Ring {
  int rank, size;
  int next() const { return (rank + 1) % size; }
  int previous() const { return (rank + size - 1) % size; }
  int source_at(int step) const { return (rank - step % size + size) % size; }
};

struct Geometry {
  int64_t chunk;
  int64_t group;  // query heads per key/value head
  double scale;
};

// Slot `slot`'s chunk of x [B, h, 2c, d].
torch::Tensor slot_of(const torch::Tensor& x, int slot, int64_t chunk) {
  return x.narrow(2, slot * chunk, chunk);
}

// [B, kv, c, d] -> [B, heads, c, d] (float32).
torch::Tensor widen_heads(const torch::Tensor& kv, int64_t group) {
  auto wide = kv.to(torch::kFloat);
  return group > 1 ? wide.repeat_interleave(group, 1) : wide;
}

// [B, heads, c, d] gradient of widened heads -> [B, kv, c, d]: each key/value
// head collects its query heads' gradients.
torch::Tensor narrow_heads(const torch::Tensor& grad, int64_t group) {
  if (group == 1) return grad;
  const auto s = grad.sizes();
  return grad.view({s[0], s[1] / group, group, s[2], s[3]}).sum(2);
}

torch::Tensor pair_scores(const torch::Tensor& q, const torch::Tensor& k, PairKind kind,
                          const torch::Tensor& future, double scale) {
  auto scores = torch::matmul(q, k.transpose(-2, -1)).mul_(scale);
  if (kind == PairKind::kDiagonal)
    scores.masked_fill_(future, -std::numeric_limits<float>::infinity());
  return scores;
}

struct RingAttention : torch::autograd::Function<RingAttention> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q,
                               const torch::Tensor& k, const torch::Tensor& v,
                               comm::Communicator* cp, const ContextShard* shard,
                               RingAttentionOptions options, at::Generator generator) {
    const Ring ring{cp->rank(), cp->size()};
    const Geometry g{shard->chunk(), options.query_group, 1.0 / std::sqrt(double(q.size(3)))};
    const double dropout = options.training ? options.dropout : 0.0;
    record_dropout(ctx, dropout, generator);
    const auto future = torch::ones({g.chunk, g.chunk}, q.options().dtype(torch::kBool)).triu(1);
    // Contiguous q, k and v are what backward keeps: views into the fused
    // projection would keep all of it alive beside the rotated copies.
    const auto queries = q.contiguous();
    const auto qf = queries.to(torch::kFloat);
    auto row_max = torch::full({q.size(0), q.size(1), q.size(2), 1},
                               -std::numeric_limits<float>::infinity(), qf.options());
    auto row_sum = torch::zeros_like(row_max);
    auto acc = torch::zeros(q.sizes(), qf.options());
    const torch::Tensor own_keys = k.contiguous(), own_values = v.contiguous();
    torch::Tensor keys = own_keys, values = own_values;
    for (int step = 0; step < ring.size; ++step) {
      Transfer send_k, send_v, recv_k, recv_v;
      if (step + 1 < ring.size) {
        recv_k = post_recv(*cp, keys, ring.previous(), kKeys, comm::Role::kActivation);
        recv_v = post_recv(*cp, values, ring.previous(), kValues, comm::Role::kActivation);
        send_k =
            post_send(*cp, keys, ring.next(), kKeys, comm::Role::kActivation, options.buffer_key);
        send_v = post_send(*cp, values, ring.next(), kValues, comm::Role::kActivation,
                           options.buffer_key);
      }
      const int source = ring.source_at(step);
      for (int a = 0; a < 2; ++a) {
        const auto q_a = slot_of(qf, a, g.chunk);
        auto max_a = slot_of(row_max, a, g.chunk), sum_a = slot_of(row_sum, a, g.chunk),
             acc_a = slot_of(acc, a, g.chunk);
        for (int b = 0; b < 2; ++b) {
          const PairKind kind = kind_of(shard->chunk_index(a), shard->chunk_index(b, source));
          if (kind == PairKind::kSkip) continue;
          const auto k_b = widen_heads(slot_of(keys, b, g.chunk), g.group);
          const auto v_b = widen_heads(slot_of(values, b, g.chunk), g.group);
          auto scores = pair_scores(q_a, k_b, kind, future, g.scale);
          const auto new_max = torch::maximum(max_a, std::get<0>(scores.max(-1, true)));
          const auto rescale = (max_a - new_max).exp_();
          auto weights = scores.sub_(new_max).exp_();
          sum_a.mul_(rescale).add_(weights.sum(-1, true));
          if (dropout > 0) weights.mul_(dropout_keep_mask(weights, dropout, generator));
          acc_a.mul_(rescale).add_(torch::matmul(weights, v_b));
          max_a.copy_(new_max);
        }
      }
      if (step + 1 < ring.size) {
        // Receives first: a compressed receive is posted only inside its
        // wait, and a large send cannot finish before it is (rendezvous).
        cp->wait(recv_k.request);
        cp->wait(recv_v.request);
        cp->wait(send_k.request);
        cp->wait(send_v.request);
        keys = on_device(recv_k.buffer, q.device());
        values = on_device(recv_v.buffer, q.device());
      }
    }
    auto out = acc.div_(row_sum);
    auto lse = row_max.add_(row_sum.log_());
    ctx->save_for_backward({queries, own_keys, own_values, out, lse});
    ctx->saved_data["cp"] = reinterpret_cast<int64_t>(cp);  // outlives the graph
    ctx->saved_data["shard"] = reinterpret_cast<int64_t>(shard);
    ctx->saved_data["group"] = options.query_group;
    ctx->saved_data["key"] = int64_t(options.buffer_key);
    return out.to(q.scalar_type());
  }

  static variable_list backward(torch::autograd::AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &q = saved[0], &k = saved[1], &v = saved[2], &out = saved[3], &lse = saved[4];
    auto* cp = reinterpret_cast<comm::Communicator*>(ctx->saved_data["cp"].toInt());
    const auto* shard = reinterpret_cast<const ContextShard*>(ctx->saved_data["shard"].toInt());
    const Ring ring{cp->rank(), cp->size()};
    const Geometry g{shard->chunk(), ctx->saved_data["group"].toInt(),
                     1.0 / std::sqrt(double(q.size(3)))};
    const uint64_t key = uint64_t(ctx->saved_data["key"].toInt());
    ReplayedDropout replay(ctx);
    const double dropout = replay.dropout();
    const auto future = torch::ones({g.chunk, g.chunk}, q.options().dtype(torch::kBool)).triu(1);
    const auto qf = q.to(torch::kFloat);
    const auto d_out = grads[0].to(torch::kFloat);
    const auto row_dot = (d_out * out).sum(-1, true);  // D
    auto dq = torch::zeros(q.sizes(), qf.options());
    torch::Tensor keys = k.contiguous(), values = v.contiguous();
    // The gradients of the block held now, accumulated around the ring.
    auto dk = torch::zeros(k.sizes(), qf.options()), dv = torch::zeros(v.sizes(), qf.options());
    for (int step = 0; step < ring.size; ++step) {
      Transfer send_k, send_v, recv_k, recv_v;
      if (step + 1 < ring.size) {
        recv_k = post_recv(*cp, keys, ring.previous(), kKeys, comm::Role::kActivation);
        recv_v = post_recv(*cp, values, ring.previous(), kValues, comm::Role::kActivation);
        send_k = post_send(*cp, keys, ring.next(), kKeys, comm::Role::kActivation, key);
        send_v = post_send(*cp, values, ring.next(), kValues, comm::Role::kActivation, key);
      }
      const int source = ring.source_at(step);
      for (int a = 0; a < 2; ++a) {
        const auto q_a = slot_of(qf, a, g.chunk), d_out_a = slot_of(d_out, a, g.chunk),
                   lse_a = slot_of(lse, a, g.chunk), row_dot_a = slot_of(row_dot, a, g.chunk);
        auto dq_a = slot_of(dq, a, g.chunk);
        for (int b = 0; b < 2; ++b) {
          const PairKind kind = kind_of(shard->chunk_index(a), shard->chunk_index(b, source));
          if (kind == PairKind::kSkip) continue;
          const auto k_b = widen_heads(slot_of(keys, b, g.chunk), g.group);
          const auto v_b = widen_heads(slot_of(values, b, g.chunk), g.group);
          auto probabilities = pair_scores(q_a, k_b, kind, future, g.scale).sub_(lse_a).exp_();
          auto d_probabilities = torch::matmul(d_out_a, v_b.transpose(-2, -1));
          torch::Tensor dv_b;
          if (dropout > 0) {
            const auto keep = dropout_keep_mask(probabilities, dropout, replay.generator());
            dv_b = torch::matmul((probabilities * keep).transpose(-2, -1), d_out_a);
            d_probabilities.mul_(keep);
          } else {
            dv_b = torch::matmul(probabilities.transpose(-2, -1), d_out_a);
          }
          auto d_scores = probabilities.mul_(d_probabilities.sub_(row_dot_a)).mul_(g.scale);
          dq_a.add_(torch::matmul(d_scores, k_b));
          slot_of(dk, b, g.chunk)
              .add_(narrow_heads(torch::matmul(d_scores.transpose(-2, -1), q_a), g.group));
          slot_of(dv, b, g.chunk).add_(narrow_heads(dv_b, g.group));
        }
      }
      // The accumulators go on with the block they belong to; after the
      // last step they reach the block's owner, this rank's arrive home.
      Transfer send_dk =
          post_send(*cp, dk, ring.next(), kKeyGrads, comm::Role::kActivationGrad, key + 1);
      Transfer send_dv =
          post_send(*cp, dv, ring.next(), kValueGrads, comm::Role::kActivationGrad, key + 1);
      Transfer recv_dk =
          post_recv(*cp, dk, ring.previous(), kKeyGrads, comm::Role::kActivationGrad);
      Transfer recv_dv =
          post_recv(*cp, dv, ring.previous(), kValueGrads, comm::Role::kActivationGrad);
      for (Transfer* t :
           {&recv_k, &recv_v, &recv_dk, &recv_dv, &send_k, &send_v, &send_dk, &send_dv})
        if (t->request.pending()) cp->wait(t->request);
      dk = on_device(recv_dk.buffer, q.device());
      dv = on_device(recv_dv.buffer, q.device());
      if (step + 1 < ring.size) {
        keys = on_device(recv_k.buffer, q.device());
        values = on_device(recv_v.buffer, q.device());
      }
    }
    return {dq.to(q.scalar_type()), dk.to(k.scalar_type()), dv.to(v.scalar_type()), torch::Tensor(),
            torch::Tensor(),        torch::Tensor(),        torch::Tensor()};
  }
};

}  // namespace

torch::Tensor ring_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             comm::Communicator& cp, const ContextShard& shard,
                             const RingAttentionOptions& options, at::Generator generator) {
  if (cp.size() != shard.size() || cp.rank() != shard.rank())
    throw std::invalid_argument(
        "ring attention: cp group rank " + std::to_string(cp.rank()) + " of " +
        std::to_string(cp.size()) + " does not match the context shard's " +
        std::to_string(shard.rank()) + " of " + std::to_string(shard.size()));
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4 || q.size(2) != shard.local_len() ||
      k.size(2) != shard.local_len() || v.sizes() != k.sizes() ||
      q.size(1) != k.size(1) * options.query_group)
    throw std::invalid_argument("ring attention: q " + c10::str(q.sizes()) + ", k " +
                                c10::str(k.sizes()) + ", v " + c10::str(v.sizes()) +
                                " do not fit a local sequence of " +
                                std::to_string(shard.local_len()) + " and " +
                                std::to_string(options.query_group) + " query heads per kv head");
  return RingAttention::apply(q, k, v, &cp, &shard, options, std::move(generator));
}

}  // namespace cmpi::parallel
