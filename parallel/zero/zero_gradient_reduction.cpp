// ZeroOptimizer's gradient reduction, bucket by bucket (step 2 of
// zero_optimizer.cpp's step): each bucket takes one path by its kind and the
// ZeRO stage —
//   - exact buckets (parameters replicated over tp): the Communicator's exact
//     sums, which no policy touches, so the tp replicas stay equal bits;
//   - the tied embedding's buckets on the stage that does not reduce them:
//     nothing here; share_tied_gradient() later brings the first stage's
//     reduced values (data_parallel_optimizer.h);
//   - otherwise through the policy: an allreduce over dp (stage 0, and stage 1
//     under powersgd or for block-sparse embedding buckets), a reduce-scatter
//     over zero whose piece goes back into the flat gradients (stage 1), or a
//     reduce-scatter into the gradient shard (stages 2/3).
// Each bucket's own non-finite values are located before the reduction
// overwrites them, so an error can say whether a rank's backward or the
// reduction produced them.
#include <cstring>
#include <stdexcept>
#include <string>

#include "comm/communicator.h"
#include "compress/nonfinite.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/zero/zero_optimizer.h"

namespace cmpi::parallel {

std::unique_ptr<PowerSgdReducer> ZeroOptimizer::make_powersgd_reducer() {
  const comm::Communicator& dp_group = groups_.dp();
  if (dp() == 1 || dp_group.policy() == nullptr) return nullptr;
  const auto& buckets = layout_.buckets();
  const comm::PolicySlice::Route* chosen = nullptr;
  size_t matched = 0;
  size_t reduced = 0;  // buckets reduced through the policy (not exactly, not elsewhere)
  for (const auto& bucket : buckets) {
    if (bucket.exact || !reduced_here(bucket)) continue;
    ++reduced;
    const auto* route = dp_group.policy()->route(comm::Op::kAllreduce, comm::Role::kGradient,
                                                 bucket.piece * size_t(dp()) * sizeof(float),
                                                 dp_group.collective_locality());
    if (route == nullptr || !route->powersgd) continue;
    chosen = route;
    ++matched;
  }
  if (chosen == nullptr) return nullptr;
  if (stage_ >= 2)
    throw std::invalid_argument(chosen->origin +
                                ": powersgd needs the gradient allreduce of parallel.zero_stage "
                                "0 or 1; stage " +
                                std::to_string(stage_) + " reduce-scatters the gradients");
  // A tensor is summed by the bucket holding its first element, which may
  // reach into the next bucket: so every bucket must take the same path.
  if (matched != reduced)
    throw std::invalid_argument(
        chosen->origin + ": powersgd matches " + std::to_string(matched) + " of the " +
        std::to_string(reduced) +
        " gradient buckets (by size: see its min_bytes/max_bytes and parallel.dp_bucket_bytes); "
        "it must match all of them or none");
  std::vector<PowerSgdTensor> tensors;
  std::vector<std::vector<size_t>> tensors_of_bucket(buckets.size());
  size_t b = 0;
  for (size_t i = 0; i < params_.size(); ++i) {
    PowerSgdTensor t;
    t.offset = layout_.offsets()[i];
    t.rows = shapes_[i].size() >= 2 ? size_t(shapes_[i][0]) : 1;
    t.cols = layout_.params()[i].numel / t.rows;
    t.raw = chosen->powersgd->raw_embeddings && is_embedding_table(params_[i].name);
    while (buckets[b].start + buckets[b].piece * size_t(dp()) <= t.offset) ++b;
    // Exact buckets, and the tied table where another stage reduces it,
    // never reach PowerSGD.
    if (buckets[b].exact || !reduced_here(buckets[b])) continue;
    tensors_of_bucket[b].push_back(tensors.size());
    tensors.push_back(t);
  }
  PowerSgdReducer::Options options;
  options.settings = *chosen->powersgd;
  return std::make_unique<PowerSgdReducer>(std::move(tensors), std::move(tensors_of_bucket),
                                           options, groups_.dp());
}

void ZeroOptimizer::reduce_gradients() {
  reduce_flat_ = flat_grads_.defined() ? flat_grads_.data_ptr<float>() : nullptr;
  reducer_->launch_remaining();
  reducer_->wait();
  const auto times = reducer_->take_times();
  last_reduction_ = {times.busy_seconds, times.waited_seconds, int64_t(times.buckets),
                     int64_t(times.launched_early)};
  if (queue_) {
    // Per layer the queue ran the buckets (and the step's gathers, counted in).
    queue_->wait_all();
    const auto queued = queue_->take_times();
    last_reduction_.total_seconds = queued.busy_seconds;
    last_reduction_.exposed_seconds = queued.waited_seconds;
  }
}

void ZeroOptimizer::reduce_bucket_staged(size_t b) {
  const auto& bucket = layout_.buckets()[b];
  const auto start = int64_t(bucket.start), span = int64_t(bucket.piece * size_t(dp()));
  auto host = host_grads_.narrow(0, start, span);
  host.copy_(flat_grads_.narrow(0, start, span));  // waits for the device's gradients
  reduce_bucket(b, host_grads_.data_ptr<float>());
  if (reduction_ == Reduction::kScatterToShard) {
    // Stage 2: the reduced piece landed in the host shard.
    const auto at = int64_t(bucket.shard_offset), piece = int64_t(bucket.piece);
    grad_shard_.narrow(0, at, piece).copy_(host_grad_shard_.narrow(0, at, piece));
    return;
  }
  flat_grads_.narrow(0, start, span).copy_(host);
}

float* ZeroOptimizer::shard_target() {
  return (host_grad_shard_.defined() ? host_grad_shard_ : grad_shard_).data_ptr<float>();
}

void ZeroOptimizer::reduce_bucket(size_t b, float* flat) {
  const auto& bucket = layout_.buckets()[b];
  const size_t span = bucket.piece * size_t(dp());
  const comm::Role role = bucket.own ? comm::Role::kEmbeddingGradient : comm::Role::kGradient;
  if (dp() > 1) {
    // The reduction overwrites (or frees) this rank's own values: look now.
    const size_t bad = compress::first_nonfinite(flat + bucket.start, span);
    own_nonfinite_at_[b] = bad < span ? bucket.start + bad : kAllFinite;
  }
  // DiLoCo after its warm-up: each replica keeps its own gradient (the tied
  // table is still shared between the pipeline's ends, as at dp = 1).
  if (!reducing_over_dp_) return;
  if (!reduced_here(bucket)) return;  // share_tied_gradient() brings the reduced values
  if (bucket.exact) {
    reduce_exactly(bucket, flat);
    return;
  }
  if (reduction_ == Reduction::kScatterInPlace && sparse_allreduce_[b]) {
    groups_.dp().allreduce(flat + bucket.start, span, role, b);
  } else if (reduction_ == Reduction::kScatterInPlace) {
    // The reduce-scatter may not write into what it reads: the summed piece
    // lands in a piece-sized buffer (used by this bucket alone: buckets run
    // one after another) and goes back where this rank's piece sits.
    const std::vector<size_t> counts(size_t(dp()), bucket.piece);
    groups_.zero().reduce_scatter(flat + bucket.start, scattered_.data(), counts, role, b);
    std::memcpy(flat + bucket.start + size_t(layout_.dp_rank()) * bucket.piece, scattered_.data(),
                bucket.piece * sizeof(float));
  } else if (stage_ < 2) {
    if (dp() > 1 && powersgd_)
      powersgd_->reduce_bucket(b, flat);
    else if (dp() > 1)
      groups_.dp().allreduce(flat + bucket.start, span, role, b);
  } else if (dp() == 1) {
    std::memcpy(shard_target() + bucket.shard_offset, flat + bucket.start, span * sizeof(float));
  } else {
    // Counts of its own: this runs on the comm thread.
    const std::vector<size_t> counts(size_t(dp()), bucket.piece);
    groups_.zero().reduce_scatter(flat + bucket.start, shard_target() + bucket.shard_offset, counts,
                                  role, b);
  }
}

bool ZeroOptimizer::reduced_here(const ZeroBucket& bucket) const {
  return !bucket.tied || options_.tied_gradient->reduces;
}

void ZeroOptimizer::reduce_exactly(const ZeroBucket& bucket, float* flat) {
  const size_t span = bucket.piece * size_t(dp());
  if (dp() == 1) {
    if (reduction_ == Reduction::kScatterToShard)
      std::memcpy(shard_target() + bucket.shard_offset, flat + bucket.start, span * sizeof(float));
    return;
  }
  const std::vector<size_t> counts(size_t(dp()), bucket.piece);
  switch (reduction_) {
    case Reduction::kAllreduce:
      groups_.dp().exact_allreduce(flat + bucket.start, span);
      break;
    case Reduction::kScatterInPlace:
      groups_.zero().exact_reduce_scatter(flat + bucket.start, scattered_.data(), counts);
      std::memcpy(flat + bucket.start + size_t(layout_.dp_rank()) * bucket.piece, scattered_.data(),
                  bucket.piece * sizeof(float));
      break;
    case Reduction::kScatterToShard:
      groups_.zero().exact_reduce_scatter(flat + bucket.start, shard_target() + bucket.shard_offset,
                                          counts);
      break;
  }
}

// Both stages walk the table's buckets in the same order, each handing over
// the part of the bucket that it holds reduced: the same part on both,
// because the table is cut alike on both (zero_layout.h).
void ZeroOptimizer::share_tied_gradient() {
  if (!options_.tied_gradient) return;
  size_t part = 0;
  for (const auto& bucket : layout_.buckets()) {
    if (!bucket.tied) continue;
    if (reduction_ == Reduction::kScatterToShard) {
      if (host_grad_shard_.defined()) {
        // A device's shard through host memory (its piece is already there).
        const auto at = int64_t(bucket.shard_offset), piece = int64_t(bucket.piece);
        options_.tied_gradient->share(part++, host_grad_shard_.data_ptr<float>() + at,
                                      bucket.piece);
        grad_shard_.narrow(0, at, piece).copy_(host_grad_shard_.narrow(0, at, piece));
        continue;
      }
      options_.tied_gradient->share(part++, grad_shard_.data_ptr<float>() + bucket.shard_offset,
                                    bucket.piece);
      continue;
    }
    if (host_grads_.defined()) {
      // A device's table through host memory: the part held reduced (the
      // whole bucket after an allreduce, this rank's piece after a
      // reduce-scatter in place).
      const bool piece_only = reduction_ == Reduction::kScatterInPlace;
      const auto start =
          int64_t(bucket.start + (piece_only ? size_t(layout_.dp_rank()) * bucket.piece : 0));
      const auto length = int64_t(piece_only ? bucket.piece : bucket.piece * size_t(dp()));
      auto host = host_grads_.narrow(0, start, length);
      host.copy_(flat_grads_.narrow(0, start, length));
      options_.tied_gradient->share(part++, host.data_ptr<float>(), size_t(length));
      flat_grads_.narrow(0, start, length).copy_(host);
      continue;
    }
    float* flat = flat_grads_.data_ptr<float>();
    if (reduction_ == Reduction::kScatterInPlace)
      options_.tied_gradient->share(
          part++, flat + bucket.start + size_t(layout_.dp_rank()) * bucket.piece, bucket.piece);
    else
      options_.tied_gradient->share(part++, flat + bucket.start, bucket.piece * size_t(dp()));
  }
}

}  // namespace cmpi::parallel
