// SliceSpec: which part of a parameter's global (unsharded) tensor a rank's
// tensor-parallel slice is: `count` equal slices along `split_dim`, this is
// number `index` (split_dim -1: the whole tensor). A slice is flattened
// row-major on its own; these helpers move elements between that flat slice
// and the flat global tensor, so shards saved under one tp size can be
// reassembled and re-cut under another. Torch-free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cmpi::checkpoint {

struct SliceSpec {
  std::vector<int64_t> global_shape;
  int32_t split_dim = -1;
  int32_t index = 0;
  int32_t count = 1;

  int64_t global_numel() const;
  int64_t numel() const;  // of the slice
  // Throws std::invalid_argument (prefixed by `what`) for a split_dim outside
  // the shape, index outside [0, count) or a dim not divisible by count.
  void validate(const std::string& what) const;
};

// Copies slice elements [offset, offset + length) from `from` into `global`.
void scatter_into_global(const SliceSpec& spec, size_t offset, size_t length, const float* from,
                         float* global);
// Copies the whole slice out of `global` into `to` (spec.numel() elements).
void gather_from_global(const SliceSpec& spec, const float* global, float* to);

// A row-major tensor of `rows` rows of `row_elements` each, cut or padded
// with zero rows to `new_rows`: a vocabulary table whose padding (rows past
// the vocabulary, which no token reaches) differs between two layouts.
std::vector<float> resize_rows(std::vector<float> values, int64_t row_elements, int64_t new_rows);

}  // namespace cmpi::checkpoint
