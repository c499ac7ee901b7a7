// Works on std::string as bytes; Strip and Metaspace compare whole UTF-8
// characters (their `from`/replacement is one character), so they step
// through each token with decode_utf8.
#include "data/token_string_decoder.h"

#include "data/char_pair_encoder.h"
#include "data/utf8.h"

namespace cmpi::data {
namespace {

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  std::string out;
  size_t at = 0;
  for (size_t found; (found = s.find(from, at)) != std::string::npos; at = found + from.size()) {
    out.append(s, at, found - at);
    out += to;
  }
  if (at == 0) return;  // nothing found
  out.append(s, at, std::string::npos);
  s.swap(out);
}

std::vector<std::string> byte_fallback(std::vector<std::string> tokens) {
  std::vector<std::string> out;
  std::string bytes;
  bool in_run = false;
  for (std::string& token : tokens) {
    if (const auto byte = CharPairEncoder::fallback_byte(token)) {
      bytes += char(*byte);
      in_run = true;
      continue;
    }
    if (in_run) out.push_back(std::move(bytes));
    bytes.clear();
    in_run = false;
    out.push_back(std::move(token));
  }
  if (in_run) out.push_back(std::move(bytes));
  return out;
}

// The byte offsets at which each UTF-8 character of `s` starts, and s.size().
std::vector<size_t> character_starts(const std::string& s) {
  std::vector<size_t> starts;
  for (size_t at = 0; at < s.size(); at += decode_utf8(s, at).length) starts.push_back(at);
  starts.push_back(s.size());
  return starts;
}

void strip(std::string& token, const std::string& c, size_t start, size_t stop) {
  const std::vector<size_t> starts = character_starts(token);
  const size_t count = starts.size() - 1;
  const auto is_c = [&](size_t i) {
    return token.compare(starts[i], starts[i + 1] - starts[i], c) == 0;
  };
  size_t first = 0;
  while (first < start && first < count && is_c(first)) ++first;
  size_t last = count;  // one past the last character kept
  while (count - last < stop && last > first && is_c(last - 1)) --last;
  token = token.substr(starts[first], starts[last] - starts[first]);
}

void metaspace(std::vector<std::string>& tokens, const MetaspaceSettings& settings) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    const bool drop = i == 0 && settings.prepend_scheme != PrependScheme::kNever;
    replace_all(tokens[i], settings.replacement, drop ? "" : " ");
  }
}

}  // namespace

std::string decode_token_strings(std::vector<std::string> tokens,
                                 const std::vector<DecoderStep>& steps) {
  for (const DecoderStep& step : steps) {
    switch (step.kind) {
      case DecoderStep::Kind::kReplace:
        for (std::string& token : tokens) replace_all(token, step.from, step.to);
        break;
      case DecoderStep::Kind::kByteFallback:
        tokens = byte_fallback(std::move(tokens));
        break;
      case DecoderStep::Kind::kFuse: {
        std::string fused;
        for (const std::string& token : tokens) fused += token;
        tokens.assign(1, std::move(fused));
        break;
      }
      case DecoderStep::Kind::kStrip:
        for (std::string& token : tokens) strip(token, step.from, step.start, step.stop);
        break;
      case DecoderStep::Kind::kMetaspace:
        metaspace(tokens, step.metaspace);
        break;
    }
  }
  std::string out;
  for (const std::string& token : tokens) out += token;
  return out;
}

}  // namespace cmpi::data
