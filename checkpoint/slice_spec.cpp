// A slice along dim d of a row-major tensor is `outer` contiguous runs of
// (slice rows x inner) elements, where outer = prod(shape[:d]) and inner =
// prod(shape[d+1:]); run o of the slice starts in the global tensor at
// o * shape[d] * inner + index * slice_rows * inner.
#include "checkpoint/slice_spec.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace cmpi::checkpoint {
namespace {

struct Runs {
  size_t run = 0;     // elements per contiguous run of the slice
  size_t stride = 0;  // distance between runs in the global tensor
  size_t start = 0;   // global offset of the first run
};

Runs runs_of(const SliceSpec& spec) {
  if (spec.split_dim < 0) {
    const size_t n = size_t(spec.global_numel());
    return {n, n, 0};
  }
  size_t inner = 1;
  for (size_t d = size_t(spec.split_dim) + 1; d < spec.global_shape.size(); ++d)
    inner *= size_t(spec.global_shape[d]);
  const size_t dim = size_t(spec.global_shape[size_t(spec.split_dim)]);
  const size_t rows = dim / size_t(spec.count);
  return {rows * inner, dim * inner, size_t(spec.index) * rows * inner};
}

}  // namespace

int64_t SliceSpec::global_numel() const {
  int64_t n = 1;
  for (int64_t d : global_shape) n *= d;
  return n;
}

int64_t SliceSpec::numel() const {
  return split_dim < 0 ? global_numel() : global_numel() / count;
}

void SliceSpec::validate(const std::string& what) const {
  // The element count must fit int64_t: global_numel() and every offset
  // computed from it (a shard's shape comes from a file) multiply the dims.
  int64_t elements = 1;
  for (int64_t d : global_shape) {
    if (d < 1) throw std::invalid_argument(what + ": non-positive dimension in the shape");
    if (elements > std::numeric_limits<int64_t>::max() / d)
      throw std::invalid_argument(what + ": shape holds more than 2^63 elements");
    elements *= d;
  }
  if (count < 1 || index < 0 || index >= count)
    throw std::invalid_argument(what + ": slice " + std::to_string(index) + " of " +
                                std::to_string(count) + " is not a valid slice");
  if (split_dim < 0) {
    if (count != 1)
      throw std::invalid_argument(what + ": replicated but cut in " + std::to_string(count) +
                                  " slices");
    return;
  }
  if (size_t(split_dim) >= global_shape.size())
    throw std::invalid_argument(what + ": split dim " + std::to_string(split_dim) +
                                " outside the shape");
  if (global_shape[size_t(split_dim)] % count != 0)
    throw std::invalid_argument(what + ": dim " + std::to_string(split_dim) + " (" +
                                std::to_string(global_shape[size_t(split_dim)]) +
                                ") does not split into " + std::to_string(count) + " slices");
}

void scatter_into_global(const SliceSpec& spec, size_t offset, size_t length, const float* from,
                         float* global) {
  const Runs r = runs_of(spec);
  size_t done = 0;
  while (done < length) {
    const size_t at = offset + done;
    const size_t run = at / r.run, within = at % r.run;
    const size_t n = std::min(length - done, r.run - within);
    std::memcpy(global + r.start + run * r.stride + within, from + done, n * sizeof(float));
    done += n;
  }
}

void gather_from_global(const SliceSpec& spec, const float* global, float* to) {
  const Runs r = runs_of(spec);
  const size_t n = size_t(spec.numel());
  for (size_t run = 0; run * r.run < n; ++run)
    std::memcpy(to + run * r.run, global + r.start + run * r.stride, r.run * sizeof(float));
}

std::vector<float> resize_rows(std::vector<float> values, int64_t row_elements, int64_t new_rows) {
  values.resize(size_t(new_rows * row_elements), 0.0f);
  return values;
}

}  // namespace cmpi::checkpoint
