// The names of the OCP 8-bit float formats (fp8_format.h), as written in
// codec specs ({name: fp8, format: e4m3}).
#include "compress/fp8_format.h"

namespace cmpi::compress {

const char* fp8_format_name(Fp8Format format) {
  return format == Fp8Format::kE4M3 ? "e4m3" : "e5m2";
}

std::optional<Fp8Format> parse_fp8_format(const std::string& name) {
  if (name == "e4m3") return Fp8Format::kE4M3;
  if (name == "e5m2") return Fp8Format::kE5M2;
  return std::nullopt;
}

}  // namespace cmpi::compress
