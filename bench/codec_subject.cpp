#include "bench/codec_subject.h"

#include <omp.h>

namespace cmpi::bench {

std::string compact_spec(const compress::CodecSpec& spec) {
  std::string out = spec.name();
  char separator = ':';
  for (const auto& [key, value] : spec.params()) {
    out += separator + key + "=" + value;
    separator = ',';
  }
  return out;
}

CodecSubject::CodecSubject(const compress::CodecRegistry& registry, const compress::CodecSpec& spec,
                           int max_threads)
    : spec_(spec), label_(compact_spec(spec)) {
  compress::CodecSpec with_one_thread = spec;
  with_one_thread.set("threads", "1");
  try {
    single_ = registry.create(with_one_thread);
  } catch (const compress::CodecError&) {
    // No threads parameter (or it is the spec itself that is wrong, in which
    // case this second attempt throws the codec's own message).
    single_ = registry.create(spec);
    return;
  }
  if (max_threads > 1) {
    compress::CodecSpec with_all_threads = spec;
    with_all_threads.set("threads", std::to_string(max_threads));
    multi_ = registry.create(with_all_threads);
  }
}

compress::Codec& CodecSubject::codec_for(int threads) {
  // Codecs without a threads parameter may still use OpenMP; its thread count
  // is set for them (and for the others, which should not care).
  omp_set_num_threads(threads);
  return (threads > 1 && multi_) ? *multi_ : *single_;
}

size_t CodecSubject::encode(const float* in, size_t n, int threads) {
  compress::Codec& codec = codec_for(threads);
  const size_t capacity = codec.max_encoded_bytes(n);
  if (payload_.size() < capacity) payload_.resize(capacity);
  payload_bytes_ = codec.encode(in, n, payload_.data(), payload_.size());
  return payload_bytes_;
}

void CodecSubject::decode(float* out, size_t n, int threads) {
  codec_for(threads).decode(payload_.data(), payload_bytes_, out, n);
}

}  // namespace cmpi::bench
