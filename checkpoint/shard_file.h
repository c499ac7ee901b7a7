// Shard file: what one rank saves. Every entry is one run of one parameter's
// state, stored against the parameter's GLOBAL layout: its global name and
// shape, which tensor-parallel slice of it the run belongs to (SliceSpec) and
// which elements of that slice (offset, length; the slice flattened
// row-major), followed by the master weights and the two AdamW moments.
// After the entries comes the rank's own state, which only a resume under the
// same layout can use: named byte strings (error-feedback residuals, random
// generator states; see checkpoint/rank_state.h).
//
// Bytes (little-endian, no padding):
//   "CMPISHRD" u32 version=1 u32 entries
//   per entry: u32 name_bytes, name, u32 ndim, i64 dims[ndim], i32 split_dim,
//              i32 slice_index, i32 slice_count, u64 offset, u64 length,
//              f32 values[length], f32 exp_avg[length], f32 exp_avg_sq[length]
//   u32 states (version 2 on; version 1 files end after the entries)
//   per state: u32 name_bytes, name, u64 bytes, u8 data[bytes]
// decode_shard checks every field against the bytes it is given and throws
// std::runtime_error naming the file and what is wrong; it never reads out of
// bounds.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "checkpoint/slice_spec.h"

namespace cmpi::checkpoint {

struct ShardEntry {
  std::string name;
  SliceSpec slice;
  uint64_t offset = 0;                             // first element of the slice this entry holds
  std::vector<float> values, exp_avg, exp_avg_sq;  // all the same length
};

// A rank's own state: name -> bytes.
using RankState = std::map<std::string, std::string>;

std::string encode_shard(const std::vector<ShardEntry>& entries, const RankState& rank_state = {});
// `rank_state`: if given, receives the rank's state (empty for version 1).
std::vector<ShardEntry> decode_shard(const std::string& bytes, const std::string& file,
                                     RankState* rank_state = nullptr);

}  // namespace cmpi::checkpoint
