// Buckets are cut greedily: each takes dp pieces of min(largest piece,
// ceil(remaining / dp)) elements, so only the last bucket reaches into the
// padding. Owned segments intersect each owned piece with the parameter
// ranges by walking both in flat order.
#include "parallel/zero_layout.h"

#include <algorithm>
#include <stdexcept>

namespace cmpi::parallel {

ZeroLayout::ZeroLayout(std::vector<FlatParam> params, int dp, int dp_rank, int64_t bucket_bytes)
    : params_(std::move(params)), dp_(dp), dp_rank_(dp_rank) {
  if (dp < 1) throw std::invalid_argument("ZeRO layout: dp = " + std::to_string(dp) + " < 1");
  if (dp_rank < 0 || dp_rank >= dp)
    throw std::invalid_argument("ZeRO layout: dp rank " + std::to_string(dp_rank) +
                                " outside [0, " + std::to_string(dp) + ")");
  const int64_t bucket_elements = bucket_bytes / int64_t(sizeof(float));
  if (bucket_elements < dp)
    throw std::invalid_argument(
        "ZeRO layout: bucket of " + std::to_string(bucket_bytes) +
        " bytes holds less than one float per dp rank (dp = " + std::to_string(dp) + ")");
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].numel == 0)
      throw std::invalid_argument("ZeRO layout: parameter " + params_[i].name + " is empty");
    offsets_.push_back(total_);
    total_ += params_[i].numel;
  }
  const size_t max_piece = size_t(bucket_elements) / size_t(dp);
  size_t start = 0, shard_offset = 0;
  while (start < total_) {
    const size_t remaining = total_ - start;
    const size_t piece = std::min(max_piece, (remaining + size_t(dp) - 1) / size_t(dp));
    buckets_.push_back({start, piece, shard_offset});
    largest_piece_ = std::max(largest_piece_, piece);
    start += piece * size_t(dp);
    shard_offset += piece;
  }
  padded_ = start;

  for (size_t i = 0; i < params_.size(); ++i)
    whole_.push_back({offsets_[i], offsets_[i], params_[i].numel, i});
  size_t param = 0;
  for (const auto& bucket : buckets_) {
    const size_t begin = bucket.start + size_t(dp_rank) * bucket.piece;
    const size_t end = std::min(begin + bucket.piece, total_);
    while (param < params_.size() && offsets_[param] + params_[param].numel <= begin) ++param;
    for (size_t p = param; p < params_.size() && offsets_[p] < end; ++p) {
      const size_t lo = std::max(begin, offsets_[p]);
      const size_t hi = std::min(end, offsets_[p] + params_[p].numel);
      owned_.push_back({lo, bucket.shard_offset + (lo - begin), hi - lo, p});
    }
  }
}

}  // namespace cmpi::parallel
