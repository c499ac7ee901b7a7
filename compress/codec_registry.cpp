#include "compress/codec_registry.h"

#include "compress/block_sparse_codec.h"
#include "compress/cast_codecs.h"
#include "compress/fp8_codec.h"
#include "compress/identity_codec.h"
#include "compress/mpc_codec.h"
#include "compress/natural_codec.h"
#include "compress/qsgd_codec.h"
#include "compress/sidco_codec.h"
#include "compress/randomk_codec.h"
#include "compress/sign_codec.h"
#include "compress/threshold_codec.h"
#include "compress/topk_codec.h"
#include "compress/zfp_codec.h"

namespace cmpi::compress {
namespace {

template <typename C>
CodecFactory factory_of() {
  return [](const CodecSpec& spec) -> std::unique_ptr<Codec> { return std::make_unique<C>(spec); };
}

}  // namespace

CodecRegistry CodecRegistry::with_builtin_codecs() {
  CodecRegistry registry;
  registry.add("identity", factory_of<IdentityCodec>());
  registry.add("zfp", factory_of<ZfpCodec>());
  registry.add("fp16", factory_of<Fp16Codec>());
  registry.add("bf16", factory_of<Bf16Codec>());
  registry.add("fp8", factory_of<Fp8Codec>());
  registry.add("mpc", factory_of<MpcCodec>());
  // Built-in codecs register here, one line each.
  registry.add("topk", factory_of<TopKCodec>());
  registry.add("randomk", factory_of<RandomKCodec>());
  registry.add("threshold", factory_of<ThresholdCodec>());
  registry.add("sidco", factory_of<SidcoCodec>());
  registry.add("block_sparse", factory_of<BlockSparseCodec>());
  registry.add("qsgd", factory_of<QsgdCodec>());
  registry.add("natural", factory_of<NaturalCodec>());
  registry.add("sign", factory_of<SignCodec>());
  return registry;
}

void CodecRegistry::add(const std::string& name, CodecFactory factory) {
  for (auto& entry : factories_) {
    if (entry.first == name) {
      entry.second = std::move(factory);
      return;
    }
  }
  factories_.emplace_back(name, std::move(factory));
}

bool CodecRegistry::contains(const std::string& name) const {
  for (const auto& entry : factories_)
    if (entry.first == name) return true;
  return false;
}

std::vector<std::string> CodecRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& entry : factories_) out.push_back(entry.first);
  return out;
}

std::unique_ptr<Codec> CodecRegistry::create(const CodecSpec& spec) const {
  for (const auto& entry : factories_)
    if (entry.first == spec.name()) return entry.second(spec);
  std::string known;
  for (const auto& entry : factories_) known += (known.empty() ? "" : ", ") + entry.first;
  throw CodecError("unknown codec '" + spec.name() + "' (known: " + known + ")");
}

std::unique_ptr<Codec> make_codec(const CodecSpec& spec) {
  return CodecRegistry::with_builtin_codecs().create(spec);
}

}  // namespace cmpi::compress
