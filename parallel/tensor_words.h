// Tensors of the compute dtype as the Communicator's buffers: float32 as
// floats, bfloat16 and half as 16-bit words (comm::WordType), so that 16-bit
// activations travel at 2 bytes per element (communicator_words16.cpp).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "compress/word_type.h"

namespace cmpi::parallel {

// The word type of a float32, bfloat16 or half tensor; throws
// std::invalid_argument naming `what` for any other dtype.
inline compress::WordType word_type_of(torch::ScalarType dtype, const char* what) {
  switch (dtype) {
    case torch::kFloat:
      return compress::WordType::kFloat32;
    case torch::kBFloat16:
      return compress::WordType::kBFloat16;
    case torch::kHalf:
      return compress::WordType::kFloat16;
    default:
      throw std::invalid_argument(std::string(what) + ": dtype " + c10::toString(dtype) +
                                  " cannot travel (float32, bfloat16 or half)");
  }
}

// The 16-bit words of a contiguous bfloat16 or half tensor.
inline uint16_t* words_of(torch::Tensor& tensor) {
  return static_cast<uint16_t*>(tensor.data_ptr());
}
inline const uint16_t* words_of(const torch::Tensor& tensor) {
  return static_cast<const uint16_t*>(tensor.data_ptr());
}

}  // namespace cmpi::parallel
