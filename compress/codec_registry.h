// CodecRegistry: codec name -> factory. Not a global: the policy engine and
// tools build one (with_builtin_codecs) and pass it where codecs are made.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compress/codec.h"

namespace cmpi::compress {

using CodecFactory = std::function<std::unique_ptr<Codec>(const CodecSpec&)>;

class CodecRegistry {
 public:
  static CodecRegistry with_builtin_codecs();

  void add(const std::string& name, CodecFactory factory);
  bool contains(const std::string& name) const;
  std::vector<std::string> names() const;

  // Throws CodecError naming the codec (and the known ones) or the bad parameter.
  std::unique_ptr<Codec> create(const CodecSpec& spec) const;

 private:
  std::vector<std::pair<std::string, CodecFactory>> factories_;
};

// Shorthand: CodecRegistry::with_builtin_codecs().create(spec).
std::unique_ptr<Codec> make_codec(const CodecSpec& spec);

}  // namespace cmpi::compress
