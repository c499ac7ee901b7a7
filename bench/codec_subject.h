// CodecSubject: a registry codec at one setting, as a BenchSubject.
//
// Codecs that take a `threads` parameter get one instance per thread count
// (threads=1 and threads=T); others get one instance and run with OpenMP's
// thread count set to 1 or T, so an OpenMP codec still shows its parallel
// speed. Encode and decode of a run always use the same instance.
#pragma once

#include <memory>
#include <vector>

#include "bench/bench_subject.h"
#include "compress/codec_registry.h"

namespace cmpi::bench {

class CodecSubject final : public BenchSubject {
 public:
  // Throws compress::CodecError if the registry cannot build the spec.
  CodecSubject(const compress::CodecRegistry& registry, const compress::CodecSpec& spec,
               int max_threads);

  std::string label() const override { return label_; }
  std::string family() const override { return spec_.name(); }
  bool lossless() const override { return single_->lossless(); }
  std::string parallelism() const override { return multi_ ? "param" : "omp"; }

  size_t encode(const float* in, size_t n, int threads) override;
  void decode(float* out, size_t n, int threads) override;

 private:
  compress::Codec& codec_for(int threads);

  compress::CodecSpec spec_;
  std::string label_;
  std::unique_ptr<compress::Codec> single_;  // threads=1, or the only instance
  std::unique_ptr<compress::Codec> multi_;   // threads=T; null without a threads param
  std::vector<uint8_t> payload_;
  size_t payload_bytes_ = 0;
};

// "zfp:mode=rate,rate=8": the CodecSpec::parse form, so a label can be passed
// back to --codec.
std::string compact_spec(const compress::CodecSpec& spec);

}  // namespace cmpi::bench
