// Decode of hostile bytes, for every codec the registry knows at run time:
// random byte strings, random bodies behind valid headers, truncations,
// bit flips and byte mutations (with and without re-sealing the header
// checksum, so that body validation is reached), wrong element counts and
// payloads of one codec given to another. Each decode must either succeed or
// throw DecodeError; anything else fails, and in the AddressSanitizer build
// of this suite (its name contains "Fuzz") so does any read or write out of
// bounds. Inputs are copied into heap blocks of exactly their size and the
// output sits between guard values, so overruns are caught even without
// ASan.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>

#include "compress/byte_order.h"
#include "compress/codec_registry.h"
#include "tests/support/test_seed.h"

namespace cmpi::compress {
namespace {

// A few specs per codec name that exercise its distinct body formats; a
// name not listed here (a codec added later) is fuzzed with its default spec.
std::map<std::string, std::vector<std::string>> representative_specs() {
  return {
      {"identity", {"identity"}},
      {"zfp",
       {"zfp:mode=rate,rate=8,chunk=256", "zfp:mode=accuracy,tolerance=1e-3,chunk=100",
        "zfp:mode=precision,precision=12", "zfp:mode=reversible,chunk=64,threads=2"}},
      {"fp16", {"fp16"}},
      {"bf16", {"bf16"}},
      {"fp8", {"fp8:format=e4m3,block=16", "fp8:format=e5m2"}},
      {"mpc", {"mpc", "mpc:dim=4,chunk=64,threads=2", "mpc:dim=auto,chunk=2048"}},
      {"topk", {"topk:ratio=0.1", "topk:ratio=0.6"}},
      {"randomk", {"randomk:ratio=0.1,seed=7"}},
      {"threshold", {"threshold:threshold=0.5"}},
      {"sidco",
       {"sidco:density=0.1,stages=2,fit=gpareto", "sidco:density=0.5,stages=3,fit=gamma,sample=0"}},
      {"block_sparse", {"block_sparse:block=4", "block_sparse:block=256"}},
      {"qsgd", {"qsgd:levels=4,bucket=128", "qsgd"}},
      {"natural", {"natural:seed=3"}},
      {"sign", {"sign:bucket=128", "sign"}},
  };
}

struct FuzzTarget {
  std::string spec_text;
  std::unique_ptr<Codec> codec;
  // Valid payloads of inputs of several lengths.
  std::vector<std::vector<float>> inputs;
  std::vector<std::vector<uint8_t>> payloads;
};

// Finite data (several codecs reject NaN/Inf on encode), never all zero:
// Gaussian values with runs of zeros and repeats, so sparse and
// zero-eliminating paths are taken too.
std::vector<float> fuzz_input(size_t n, std::mt19937_64& rng) {
  std::normal_distribution<float> gauss(0.f, 1.f);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t kind = rng() % 8;
    v[i] = kind == 0 ? 0.f : kind == 1 && i ? v[i - 1] : gauss(rng) * (kind == 2 ? 1e3f : 1.f);
  }
  if (n) v[0] = 1.5f;
  return v;
}

const std::vector<size_t> kLengths = {0, 1, 5, 64, 333, 1000};

std::vector<FuzzTarget> all_targets(uint64_t seed) {
  const CodecRegistry registry = CodecRegistry::with_builtin_codecs();
  std::vector<FuzzTarget> targets;
  for (const std::string& name : registry.names()) {
    const auto specs = representative_specs();
    const auto known = specs.find(name);
    const std::vector<std::string> texts =
        known == specs.end() ? std::vector<std::string>{name} : known->second;
    for (const std::string& text : texts) {
      FuzzTarget target;
      target.spec_text = text;
      try {
        target.codec = registry.create(CodecSpec::parse(text));
      } catch (const CodecError& e) {
        ADD_FAILURE() << "codec spec '" << text << "' does not build (" << e.what()
                      << "); give codec '" << name
                      << "' a representative spec in codec_fuzz_test.cpp";
        continue;
      }
      std::mt19937_64 rng(seed ^ std::hash<std::string>()(text));
      for (size_t n : kLengths) {
        target.inputs.push_back(fuzz_input(n, rng));
        target.payloads.push_back(target.codec->encode(target.inputs.back().data(), n));
      }
      targets.push_back(std::move(target));
    }
  }
  return targets;
}

// The header fields as stored, without validation (for re-sealing).
PayloadHeader raw_header(const std::vector<uint8_t>& payload) {
  PayloadHeader header;
  header.codec = static_cast<CodecId>(payload[5]);
  header.flags = load_le16(&payload[6]);
  for (size_t i = 0; i < 4; ++i) header.params[i] = load_le32(&payload[8 + 4 * i]);
  header.element_count = load_le64(&payload[24]);
  header.body_bytes = load_le64(&payload[32]);
  return header;
}

// Rewrites magic, version and checksum (and body_bytes to the real size) so
// the payload passes header validation and the mutation reaches the body.
void reseal(std::vector<uint8_t>& payload) {
  if (payload.size() < kPayloadHeaderBytes) return;
  PayloadHeader header = raw_header(payload);
  header.body_bytes = payload.size() - kPayloadHeaderBytes;
  write_payload_header(header, payload.data());
}

// Runs decode on `bytes` (copied into a heap block of exactly their size)
// into n floats between guards. Returns false, after reporting, if decode
// did anything but succeed or throw DecodeError.
class DecodeProbe {
 public:
  explicit DecodeProbe(const FuzzTarget& target) : target_(target) {}

  bool operator()(const std::vector<uint8_t>& bytes, size_t n, const std::string& what) {
    ++decodes_;
    std::unique_ptr<uint8_t[]> exact(new uint8_t[bytes.size() ? bytes.size() : 1]);
    if (!bytes.empty()) std::memcpy(exact.get(), bytes.data(), bytes.size());
    constexpr size_t kGuard = 16;
    constexpr float kGuardValue = -12345.678f;
    std::vector<float> out(n + 2 * kGuard, kGuardValue);
    try {
      target_.codec->decode(exact.get(), bytes.size(), out.data() + kGuard, n);
    } catch (const DecodeError&) {
      ++rejected_;
    } catch (const std::exception& e) {
      return report(what, std::string("threw a non-DecodeError: ") + e.what());
    } catch (...) {
      return report(what, "threw a non-std exception");
    }
    for (size_t i = 0; i < kGuard; ++i)
      if (out[i] != kGuardValue || out[n + kGuard + i] != kGuardValue)
        return report(what, "wrote outside the output");
    return true;
  }
  size_t decodes() const { return decodes_; }
  size_t rejected() const { return rejected_; }

 private:
  bool report(const std::string& what, const std::string& failure) {
    ADD_FAILURE() << target_.spec_text << ": decode of " << what << " " << failure;
    return false;
  }
  const FuzzTarget& target_;
  size_t decodes_ = 0;
  size_t rejected_ = 0;
};

class CodecFuzz : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = cmpi::testing::test_seed();
    targets_ = all_targets(seed_);
    ASSERT_FALSE(targets_.empty());
  }
  std::mt19937_64 rng_for(const FuzzTarget& target, uint64_t salt) const {
    return std::mt19937_64(seed_ ^ std::hash<std::string>()(target.spec_text) ^ salt);
  }

  uint64_t seed_ = 0;
  std::vector<FuzzTarget> targets_;
};

std::vector<uint8_t> random_bytes(std::mt19937_64& rng, size_t n) {
  std::vector<uint8_t> bytes(n);
  for (auto& b : bytes) b = uint8_t(rng());
  return bytes;
}

TEST_F(CodecFuzz, RandomBytesAndRandomBodiesBehindValidHeaders) {
  for (const FuzzTarget& target : targets_) {
    DecodeProbe probe(target);
    auto rng = rng_for(target, 1);
    for (int trial = 0; trial < 1500; ++trial) {
      const size_t n = kLengths[rng() % kLengths.size()];
      if (!probe(random_bytes(rng, rng() % 200), n, "random bytes")) break;
    }
    // Bodies of random bytes and random sizes behind this codec's own valid
    // header: only body validation stands between them and the decoder.
    const PayloadHeader own = raw_header(target.payloads.back());
    for (int trial = 0; trial < 1500; ++trial) {
      const size_t n = kLengths[rng() % kLengths.size()];
      const size_t body = rng() % 4 == 0 ? rng() % 16 : rng() % (8 * n + 64);
      std::vector<uint8_t> payload = random_bytes(rng, kPayloadHeaderBytes + body);
      PayloadHeader header = own;
      header.flags = rng() % 8 == 0 ? uint16_t(rng()) : 0;
      header.element_count = n;
      header.body_bytes = body;
      write_payload_header(header, payload.data());
      if (!probe(payload, n, "random body of " + std::to_string(body) + " bytes")) break;
    }
    EXPECT_GT(probe.rejected(), 0u) << target.spec_text;
  }
}

TEST_F(CodecFuzz, TruncatedPayloads) {
  for (const FuzzTarget& target : targets_) {
    DecodeProbe probe(target);
    for (size_t p = 0; p < target.payloads.size(); ++p) {
      const auto& good = target.payloads[p];
      const size_t n = target.inputs[p].size();
      std::vector<float> decoded(n);
      ASSERT_NO_THROW(target.codec->decode(good.data(), good.size(), decoded.data(), n))
          << target.spec_text << " rejects its own payload of n=" << n;
      // Every length up to the header plus 64 bytes, as is and re-sealed.
      const size_t limit = std::min(good.size(), kPayloadHeaderBytes + 64);
      for (size_t length = 0; length < limit; ++length) {
        std::vector<uint8_t> cut(good.begin(), good.begin() + long(length));
        const std::string what =
            "payload of n=" + std::to_string(n) + " cut to " + std::to_string(length) + " bytes";
        if (!probe(cut, n, what)) break;
        reseal(cut);
        if (!probe(cut, n, "re-sealed " + what)) break;
      }
      // And every 97th length beyond.
      for (size_t length = limit; length < good.size(); length += 97) {
        std::vector<uint8_t> cut(good.begin(), good.begin() + long(length));
        reseal(cut);
        if (!probe(cut, n, "re-sealed payload cut to " + std::to_string(length))) break;
      }
    }
  }
}

TEST_F(CodecFuzz, BitFlipsAndByteMutations) {
  for (const FuzzTarget& target : targets_) {
    DecodeProbe probe(target);
    auto rng = rng_for(target, 2);
    for (size_t p = 0; p < target.payloads.size(); ++p) {
      const auto& good = target.payloads[p];
      const size_t n = target.inputs[p].size();
      const std::string of_n = " (n=" + std::to_string(n) + ")";
      // Every header bit, as is (checksum catches it) and re-sealed (the
      // changed field itself must be caught), on a short and a long payload.
      const bool header_flips = n == 5 || n == 1000;
      for (size_t bit = 0; header_flips && bit < 8 * kPayloadHeaderBytes; ++bit) {
        auto flipped = good;
        flipped[bit / 8] ^= uint8_t(1u << (bit % 8));
        if (!probe(flipped, n, "header bit " + std::to_string(bit) + " flipped" + of_n)) break;
        reseal(flipped);
        if (!probe(flipped, n, "re-sealed header bit " + std::to_string(bit) + of_n)) break;
      }
      const size_t body = good.size() - kPayloadHeaderBytes;
      if (body == 0) continue;
      // Body bits: every one in bodies up to 256 bytes, a random sample in
      // longer ones.
      const size_t body_bits = 8 * body;
      const size_t flips = body <= 256 ? body_bits : 600;
      for (size_t i = 0; i < flips; ++i) {
        const size_t bit = flips == body_bits ? i : rng() % body_bits;
        auto flipped = good;
        flipped[kPayloadHeaderBytes + bit / 8] ^= uint8_t(1u << (bit % 8));
        if (!probe(flipped, n, "body bit " + std::to_string(bit) + " flipped" + of_n)) break;
      }
      // Byte mutations: one byte set to 0x00, 0xff or random; bursts of
      // several bytes; bytes inserted or deleted (header re-sealed).
      for (int trial = 0; trial < 300; ++trial) {
        auto mutated = good;
        const int bytes = trial % 3 == 0 ? 1 + int(rng() % 8) : 1;
        for (int b = 0; b < bytes; ++b) {
          const size_t at = kPayloadHeaderBytes + rng() % body;
          const uint64_t kind = rng() % 3;
          mutated[at] = kind == 0 ? 0x00 : kind == 1 ? 0xff : uint8_t(rng());
        }
        if (!probe(mutated, n, "mutated body" + of_n)) break;
      }
      for (int trial = 0; trial < 100; ++trial) {
        auto spliced = good;
        const size_t at = kPayloadHeaderBytes + rng() % body;
        const size_t count = 1 + rng() % 8;
        if (trial % 2)
          spliced.insert(spliced.begin() + long(at), count, uint8_t(rng()));
        else
          spliced.erase(spliced.begin() + long(at),
                        spliced.begin() + long(std::min(at + count, spliced.size())));
        reseal(spliced);
        if (!probe(spliced, n, "re-sealed body with bytes inserted/deleted" + of_n)) break;
      }
    }
  }
}

TEST_F(CodecFuzz, WrongElementCounts) {
  for (const FuzzTarget& target : targets_) {
    DecodeProbe probe(target);
    for (size_t p = 0; p < target.payloads.size(); ++p) {
      const auto& good = target.payloads[p];
      const size_t n = target.inputs[p].size();
      for (size_t wrong : {n + 1, n ? n - 1 : 2, n / 2, 2 * n + 3, n + 64, size_t(0)}) {
        if (wrong == n) continue;
        const std::string what =
            "n=" + std::to_string(n) + " payload as n=" + std::to_string(wrong);
        if (!probe(good, wrong, what)) break;
        // The header re-sealed to claim `wrong` elements: the body must be
        // checked against the count it is decoded for.
        auto relabeled = good;
        PayloadHeader header = raw_header(relabeled);
        header.element_count = wrong;
        write_payload_header(header, relabeled.data());
        if (!probe(relabeled, wrong, "re-sealed " + what)) break;
      }
    }
  }
}

TEST_F(CodecFuzz, PayloadsOfOneCodecGivenToAnother) {
  for (const FuzzTarget& decoder : targets_) {
    DecodeProbe probe(decoder);
    const PayloadHeader decoder_header = raw_header(decoder.payloads.back());
    for (const FuzzTarget& encoder : targets_) {
      if (&encoder == &decoder) continue;
      for (size_t p = 0; p < encoder.payloads.size(); ++p) {
        const size_t n = encoder.inputs[p].size();
        const std::string what = encoder.spec_text + " payload (n=" + std::to_string(n) + ")";
        if (!probe(encoder.payloads[p], n, what)) break;
        // Re-labeled as the decoder's own codec and parameters, so that the
        // foreign body reaches the decoder's body validation.
        auto relabeled = encoder.payloads[p];
        PayloadHeader header = raw_header(relabeled);
        header.codec = decoder_header.codec;
        header.params = decoder_header.params;
        write_payload_header(header, relabeled.data());
        if (!probe(relabeled, n, "re-labeled " + what)) break;
      }
    }
  }
}

}  // namespace
}  // namespace cmpi::compress
