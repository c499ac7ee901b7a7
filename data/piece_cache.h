// The per-piece result cache of the BPE encoders (byte_pair_encoder.h,
// char_pair_encoder.h): natural text repeats its words, so a piece's ids are
// kept once computed. Bounded: cleared when it reaches kEntries, and pieces
// longer than kMaxBytes (a whole segment where no pre-tokenizer cuts words)
// are not kept, so memory stays bounded on any corpus.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cmpi::data {

class PieceCache {
 public:
  static constexpr size_t kEntries = size_t(1) << 18;
  static constexpr size_t kMaxBytes = 256;

  // Appends the cached ids of `piece` to `out`; false (nothing appended)
  // when the piece is not cached.
  bool append(const std::string& piece, std::vector<int32_t>& out) const {
    const auto cached = ids_.find(piece);
    if (cached == ids_.end()) return false;
    out.insert(out.end(), cached->second.begin(), cached->second.end());
    return true;
  }
  // Keeps `ids` for `piece` unless the piece is too long to keep.
  void store(std::string piece, std::vector<int32_t> ids) {
    if (piece.size() > kMaxBytes) return;
    if (ids_.size() >= kEntries) ids_.clear();
    ids_.emplace(std::move(piece), std::move(ids));
  }

 private:
  std::unordered_map<std::string, std::vector<int32_t>> ids_;
};

}  // namespace cmpi::data
