// Helpers shared by the sparsifier, quantizer and error-feedback tests.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "compress/codec.h"
#include "compress/payload.h"

namespace cmpi::compress::test_util {

// Gaussian floats; never all zero.
inline std::vector<float> gaussian(size_t n, uint64_t seed, float sigma = 1.f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

inline std::vector<float> decode_all(const Codec& codec, const std::vector<uint8_t>& payload,
                                     size_t n) {
  std::vector<float> out(n);
  codec.decode(payload.data(), payload.size(), out.data(), n);
  return out;
}

inline std::vector<uint8_t> body_of(const std::vector<uint8_t>& payload) {
  return std::vector<uint8_t>(payload.begin() + kPayloadHeaderBytes, payload.end());
}

// The payload `original` with its body replaced (header rewritten so that
// only the body is wrong).
inline std::vector<uint8_t> with_body(const std::vector<uint8_t>& original,
                                      const std::vector<uint8_t>& body) {
  PayloadHeader header = read_payload_header(original.data(), original.size());
  header.body_bytes = body.size();
  std::vector<uint8_t> out(kPayloadHeaderBytes + body.size());
  write_payload_header(header, out.data());
  if (!body.empty()) std::memcpy(out.data() + kPayloadHeaderBytes, body.data(), body.size());
  return out;
}

// "" if the payload decodes, else the DecodeError field; any other exception
// fails the test.
inline std::string decode_outcome(const Codec& codec, const std::vector<uint8_t>& payload,
                                  size_t n) {
  std::vector<float> out(n);
  try {
    codec.decode(payload.data(), payload.size(), out.data(), n);
  } catch (const DecodeError& e) {
    return e.field();
  }
  return "";
}

inline uint32_t float_bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

inline float float_from_bits(uint32_t b) {
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}

// Mutates a valid payload's body in many random ways (byte flips, random
// bytes, truncation, extension) and checks that decode either succeeds or
// throws DecodeError, never anything else; runs under AddressSanitizer in
// suites named *Fuzz*.
inline void mutate_bodies(const Codec& codec, const std::vector<uint8_t>& payload, size_t n,
                          uint64_t seed, int rounds) {
  std::mt19937_64 rng(seed);
  const std::vector<uint8_t> body = body_of(payload);
  for (int round = 0; round < rounds; ++round) {
    std::vector<uint8_t> mutated = body;
    switch (rng() % 4) {
      case 0:
        if (!mutated.empty())
          for (int flips = 1 + int(rng() % 4); flips > 0; --flips)
            mutated[rng() % mutated.size()] ^= uint8_t(1u << (rng() % 8));
        break;
      case 1:
        for (auto& b : mutated)
          if (rng() % 8 == 0) b = uint8_t(rng());
        break;
      case 2:
        mutated.resize(mutated.empty() ? 0 : rng() % mutated.size());
        break;
      case 3:
        for (int extra = 1 + int(rng() % 16); extra > 0; --extra) mutated.push_back(uint8_t(rng()));
        break;
    }
    EXPECT_NO_THROW(decode_outcome(codec, with_body(payload, mutated), n))
        << codec.spec().to_string() << " round " << round;
  }
}

}  // namespace cmpi::compress::test_util
