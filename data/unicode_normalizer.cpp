// Splits the text at bytes that decode_utf8 rejects; each valid run goes
// through ICU's Normalizer2 (UTF-16 inside ICU), after a quick check that
// skips runs already in the form.
#include "data/unicode_normalizer.h"

#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include <stdexcept>

#include "data/utf8.h"

namespace cmpi::data {
namespace {

const icu::Normalizer2& icu_normalizer(UnicodeNormalForm form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = nullptr;
  switch (form) {
    case UnicodeNormalForm::kNfc:
      n = icu::Normalizer2::getNFCInstance(status);
      break;
    case UnicodeNormalForm::kNfd:
      n = icu::Normalizer2::getNFDInstance(status);
      break;
    case UnicodeNormalForm::kNfkc:
      n = icu::Normalizer2::getNFKCInstance(status);
      break;
    case UnicodeNormalForm::kNfkd:
      n = icu::Normalizer2::getNFKDInstance(status);
      break;
  }
  if (U_FAILURE(status) || !n) {
    throw std::runtime_error(std::string("ICU normalizer unavailable: ") + u_errorName(status));
  }
  return *n;
}

}  // namespace

UnicodeNormalizer::UnicodeNormalizer(std::vector<UnicodeNormalForm> forms)
    : forms_(std::move(forms)) {
  for (const UnicodeNormalForm form : forms_) icu_normalizer(form);
}

std::string UnicodeNormalizer::normalize(std::string_view text) const {
  std::string out(text);
  for (const UnicodeNormalForm form : forms_) out = normalize_once(form, out);
  return out;
}

std::string UnicodeNormalizer::normalize_once(UnicodeNormalForm form, std::string_view text) const {
  const icu::Normalizer2& n = icu_normalizer(form);
  std::string out;
  out.reserve(text.size());
  size_t run_start = 0;
  const auto flush = [&](size_t run_end) {
    if (run_end == run_start) return;
    const std::string_view run = text.substr(run_start, run_end - run_start);
    bool ascii = true;  // ASCII is in every normal form
    for (const char c : run) ascii = ascii && uint8_t(c) < 0x80;
    if (ascii) {
      out.append(run);
      return;
    }
    const icu::UnicodeString source =
        icu::UnicodeString::fromUTF8(icu::StringPiece(run.data(), int32_t(run.size())));
    UErrorCode status = U_ZERO_ERROR;
    if (n.isNormalized(source, status) && U_SUCCESS(status)) {
      out.append(run);
      return;
    }
    status = U_ZERO_ERROR;
    const icu::UnicodeString normal = n.normalize(source, status);
    if (U_FAILURE(status)) {
      throw std::runtime_error(std::string("ICU normalization failed: ") + u_errorName(status));
    }
    normal.toUTF8String(out);
  };
  for (size_t at = 0; at < text.size();) {
    const DecodedCodePoint d = decode_utf8(text, at);
    if (d.code_point == kInvalidCodePoint) {
      flush(at);
      out += text[at];
      run_start = at + 1;
    }
    at += d.length;
  }
  flush(text.size());
  return out;
}

}  // namespace cmpi::data
