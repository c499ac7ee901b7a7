// ZeroLayout: where each parameter lives in the flat buffer that the
// data-parallel optimizer keeps, how that buffer is cut into communication
// buckets, and which slice of it (the shard) this dp rank owns under ZeRO.
//
// Parameters are packed one after another (registration order) into a flat
// buffer of `total` elements, padded to `padded` (a multiple of dp, less than
// dp elements of padding). The buffer is cut into buckets of at most
// bucket_elements; bucket b spans dp equal pieces of `piece` elements each and
// rank r owns piece r of every bucket:
//
//   flat:  | b0: r0 r1 .. r(dp-1) | b1: r0 r1 .. | ... |
//   shard of rank r = b0.piece(r) ++ b1.piece(r) ++ ...   (padded / dp elements)
//
// So one reduce-scatter per bucket leaves each rank the summed gradient of its
// pieces (contiguous in its shard), and one allgather per bucket writes every
// rank's updated pieces straight back into the flat buffer. With dp = 1 the
// shard is the whole buffer. Torch-free: it only knows sizes and flags.
//
// Units (per-layer ZeRO-3): the parameters may be cut into units, contiguous
// runs of parameters gathered together (a layer). Each unit is laid out as
// above on its own, padded to its own multiple of dp, so no bucket straddles
// two units and a unit's buckets gather it alone:
//
//   flat:  | unit 0: b0 b1 (pad) | unit 1: b2 (pad) | ... |
//
// Without units the whole buffer is one unit (the layout above). Either way a
// parameter's elements keep their row-major order, so state described per
// parameter (checkpoints: parameter, offset, length) does not depend on it.
//
// Own buckets (FlatParam::own_buckets, a sparse embedding's gradient): such
// a parameter is cut into buckets of its own, shared with no other
// parameter; the runs of parameters before and after it are cut as above,
// each padded to a multiple of dp, so padding may sit inside a unit:
//
//   flat:  | unit 0: b0 (emb) (pad) | b1 b2 (rest) (pad) | unit 1: ... |
//
// The tied table on a pipeline end (FlatParam::tied_copy) is cut into
// buckets of its own the same way, so that the first and the last stage cut
// it alike (same pieces, whatever else each stage holds). Parameters
// replicated over tp (FlatParam::exact) share buckets only with each other:
// each run of consecutive such parameters is cut as above, so a bucket is
// either all replicated (reduced by an exact sum) or holds none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cmpi::parallel {

struct FlatParam {
  std::string name;
  size_t numel = 0;
  bool tensor_parallel = false;  // a distinct shard on every tp rank
  bool weight_decay = true;
  bool counted_on_other_stage = false;  // its gradient norm is counted by another pp stage
  bool own_buckets = false;             // no other parameter shares its buckets
  bool tied_copy = false;               // the tied table on a pipeline end: buckets of its own
  bool exact = false;                   // replicated over tp: buckets shared only with such
};

struct ZeroBucket {
  size_t start = 0;         // flat offset of the bucket
  size_t piece = 0;         // elements per rank; the bucket spans dp * piece
  size_t shard_offset = 0;  // where this rank's piece sits in its shard
  bool own = false;         // holds (part of) an own_buckets parameter only
  bool tied = false;        // holds (part of) the tied_copy parameter only
  bool exact = false;       // holds exact parameters only
};

// Parameters [first_param, end_param) at flat [start, end), buckets
// [first_bucket, end_bucket); end - start is a multiple of dp (own-bucket
// parameters may leave padding inside).
struct ZeroUnit {
  size_t first_param = 0, end_param = 0;
  size_t start = 0, end = 0;
  size_t first_bucket = 0, end_bucket = 0;
};

// A run of elements owned by this rank that belong to one parameter.
struct ZeroSegment {
  size_t flat_offset = 0;
  size_t shard_offset = 0;
  size_t length = 0;
  size_t param = 0;  // index into params()
};

class ZeroLayout {
 public:
  // unit_ends: where each unit's parameters end (the last entry is the
  // parameter count); empty: one unit. Throws std::invalid_argument for
  // dp < 1, dp_rank outside [0, dp), bucket_bytes below one float per rank,
  // an empty parameter (naming it) or unit ends that do not partition the
  // parameters.
  ZeroLayout(std::vector<FlatParam> params, int dp, int dp_rank, int64_t bucket_bytes,
             std::vector<size_t> unit_ends = {});

  const std::vector<FlatParam>& params() const { return params_; }
  const std::vector<size_t>& offsets() const { return offsets_; }  // flat offset per param
  size_t total() const { return total_; }                          // end of the last parameter
  size_t padded() const { return padded_; }
  size_t shard_size() const { return padded_ / size_t(dp_); }
  int dp() const { return dp_; }
  int dp_rank() const { return dp_rank_; }
  const std::vector<ZeroBucket>& buckets() const { return buckets_; }
  size_t largest_piece() const { return largest_piece_; }
  const std::vector<ZeroUnit>& units() const { return units_; }

  // This rank's pieces cut at parameter boundaries (padding left out), in
  // flat order.
  const std::vector<ZeroSegment>& owned_segments() const { return owned_; }
  // Every parameter as one segment (shard_offset = flat_offset): what a rank
  // that holds the whole buffer owns.
  const std::vector<ZeroSegment>& whole_segments() const { return whole_; }

 private:
  std::vector<FlatParam> params_;
  std::vector<size_t> offsets_;
  size_t total_ = 0;
  size_t padded_ = 0;
  int dp_ = 1;
  int dp_rank_ = 0;
  std::vector<ZeroBucket> buckets_;
  size_t largest_piece_ = 0;
  std::vector<ZeroUnit> units_;
  std::vector<ZeroSegment> owned_;
  std::vector<ZeroSegment> whole_;
};

}  // namespace cmpi::parallel
