// Buckets are cut greedily, run by run: a run is an own-buckets or
// tied-copy parameter alone, or a unit's longest sequence of consecutive
// other parameters that are all exact or all not. Each bucket takes dp pieces of
// min(largest piece, ceil(remaining in the run / dp)) elements, so only a
// run's last bucket reaches into its padding, and the next run starts after
// it. Owned segments intersect each owned piece with the parameter ranges by
// walking both in flat order.
#include "parallel/zero/zero_layout.h"

#include <algorithm>
#include <stdexcept>

namespace cmpi::parallel {

ZeroLayout::ZeroLayout(std::vector<FlatParam> params, int dp, int dp_rank, int64_t bucket_bytes,
                       std::vector<size_t> unit_ends)
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
  if (unit_ends.empty()) unit_ends.push_back(params_.size());
  for (size_t u = 0; u < unit_ends.size(); ++u) {
    const size_t begin = u == 0 ? 0 : unit_ends[u - 1];
    if (unit_ends[u] <= begin || unit_ends[u] > params_.size() ||
        (u + 1 == unit_ends.size() && unit_ends[u] != params_.size()))
      throw std::invalid_argument("ZeRO layout: unit " + std::to_string(u) + " ends at parameter " +
                                  std::to_string(unit_ends[u]) + ", which does not partition " +
                                  std::to_string(params_.size()) + " parameters into units");
  }
  for (const auto& p : params_)
    if (p.numel == 0) throw std::invalid_argument("ZeRO layout: parameter " + p.name + " is empty");

  const size_t max_piece = size_t(bucket_elements) / size_t(dp);
  size_t start = 0, shard_offset = 0;
  for (size_t u = 0; u < unit_ends.size(); ++u) {
    ZeroUnit unit;
    unit.first_param = u == 0 ? 0 : unit_ends[u - 1];
    unit.end_param = unit_ends[u];
    unit.start = start;
    unit.first_bucket = buckets_.size();
    for (size_t run = unit.first_param; run < unit.end_param;) {
      const auto alone = [&](size_t i) { return params_[i].own_buckets || params_[i].tied_copy; };
      const bool own = params_[run].own_buckets, tied = params_[run].tied_copy;
      const bool exact = params_[run].exact && !alone(run);
      size_t run_end = run + 1;
      while (!alone(run) && run_end < unit.end_param && !alone(run_end) &&
             params_[run_end].exact == exact)
        ++run_end;
      const size_t run_start = start;
      for (size_t i = run; i < run_end; ++i) {
        offsets_.push_back(start);
        start += params_[i].numel;
      }
      total_ = start;
      const size_t run_total = start;
      start = run_start;
      while (start < run_total) {
        const size_t remaining = run_total - start;
        const size_t piece = std::min(max_piece, (remaining + size_t(dp) - 1) / size_t(dp));
        buckets_.push_back({start, piece, shard_offset, own, tied, exact});
        largest_piece_ = std::max(largest_piece_, piece);
        start += piece * size_t(dp);
        shard_offset += piece;
      }
      run = run_end;
    }
    unit.end = start;
    unit.end_bucket = buckets_.size();
    units_.push_back(unit);
  }
  padded_ = start;

  for (size_t i = 0; i < params_.size(); ++i)
    whole_.push_back({offsets_[i], offsets_[i], params_[i].numel, i});
  size_t param = 0;
  for (const auto& bucket : buckets_) {
    const size_t begin = bucket.start + size_t(dp_rank) * bucket.piece;
    const size_t end = begin + bucket.piece;
    while (param < params_.size() && offsets_[param] + params_[param].numel <= begin) ++param;
    for (size_t p = param; p < params_.size() && offsets_[p] < end; ++p) {
      const size_t lo = std::max(begin, offsets_[p]);
      const size_t hi = std::min(end, offsets_[p] + params_[p].numel);
      if (hi > lo) owned_.push_back({lo, bucket.shard_offset + (lo - begin), hi - lo, p});
    }
  }
}

}  // namespace cmpi::parallel
