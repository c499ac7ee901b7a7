// Finite-input checks shared by the codecs that cannot represent NaN or
// infinity (randomk, qsgd, sign): they scan the input and refuse it with an
// error naming the codec and the first offending index, instead of sending
// a payload that would decode to garbage.
#pragma once

#include <cstddef>

#include "compress/codec_spec.h"

namespace cmpi::compress {

// Index of the first NaN or infinity in x[0..n), or n if there is none.
size_t first_nonfinite(const float* x, size_t n);

// Throws std::invalid_argument naming the codec, the index and the value if
// x[0..n) holds a NaN or an infinity.
void require_finite(const CodecSpec& spec, const float* x, size_t n);

}  // namespace cmpi::compress
