// Byte-string operations for Prepend and Replace: their strings are valid
// UTF-8, so in valid text a match starts and ends at character boundaries.
#include "data/text_normalizer.h"

namespace cmpi::data {
namespace {

std::string replace_all(const std::string& text, const std::string& from, const std::string& to) {
  std::string out;
  out.reserve(text.size());
  size_t at = 0;
  for (size_t found; (found = text.find(from, at)) != std::string::npos; at = found + from.size()) {
    out.append(text, at, found - at);
    out += to;
  }
  out.append(text, at, std::string::npos);
  return out;
}

}  // namespace

TextNormalizer::TextNormalizer(std::vector<NormalizerStep> steps) {
  steps_.reserve(steps.size());
  for (NormalizerStep& spec : steps) {
    std::vector<UnicodeNormalForm> forms;
    if (spec.kind == NormalizerStep::Kind::kUnicode) forms.push_back(spec.form);
    steps_.push_back({std::move(spec), UnicodeNormalizer(std::move(forms))});
  }
}

std::string TextNormalizer::normalize(std::string_view text) const {
  std::string out(text);
  for (const Step& step : steps_) {
    switch (step.spec.kind) {
      case NormalizerStep::Kind::kUnicode:
        out = step.unicode.normalize(out);
        break;
      case NormalizerStep::Kind::kPrepend:
        if (!out.empty()) out.insert(0, step.spec.text);
        break;
      case NormalizerStep::Kind::kReplace:
        out = replace_all(out, step.spec.text, step.spec.replacement);
        break;
    }
  }
  return out;
}

}  // namespace cmpi::data
