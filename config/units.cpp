#include "config/units.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>

namespace cmpi::config {
namespace {

std::string lower(std::string text) {
  for (char& c : text) c = char(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// Optimal string alignment distance: Levenshtein plus adjacent transpositions,
// so "modle" is one edit from "model".
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

const char* const kSizeUnitsText =
    "B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024)";

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (bytes >= 1000.0 && u < 5) {
    bytes /= 1000.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
  return buf;
}

std::string human_seconds(double s) {
  char buf[32];
  if (s < 1e-3)
    std::snprintf(buf, sizeof buf, "%.0f us", s * 1e6);
  else if (s < 1)
    std::snprintf(buf, sizeof buf, "%.1f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

std::optional<int64_t> parse_integer(const std::string& text) {
  size_t start = (!text.empty() && (text[0] == '+' || text[0] == '-')) ? 1 : 0;
  if (start == text.size()) return std::nullopt;
  for (size_t i = start; i < text.size(); ++i)
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE) return std::nullopt;
  return int64_t(value);
}

std::optional<double> parse_real(const std::string& text) {
  // Only decimal notation: strtod would also take "nan", "inf" and hex floats.
  bool has_digit = false;
  for (char c : text) {
    if (c >= '0' && c <= '9')
      has_digit = true;
    else if (c != '+' && c != '-' && c != '.' && c != 'e' && c != 'E')
      return std::nullopt;
  }
  if (!has_digit) return std::nullopt;
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(begin, &end);
  if (end != begin + text.size() || errno == ERANGE || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::optional<int64_t> parse_size(const std::string& text) {
  size_t pos = 0;
  __int128 whole = 0;
  size_t whole_digits = 0;
  for (; pos < text.size() && text[pos] >= '0' && text[pos] <= '9'; ++pos, ++whole_digits) {
    whole = whole * 10 + (text[pos] - '0');
    if (whole > std::numeric_limits<int64_t>::max()) return std::nullopt;
  }
  __int128 fraction = 0, fraction_scale = 1;
  if (pos < text.size() && text[pos] == '.') {
    for (++pos; pos < text.size() && text[pos] >= '0' && text[pos] <= '9'; ++pos) {
      if (fraction_scale >= __int128(1000000000000000000LL)) return std::nullopt;
      fraction = fraction * 10 + (text[pos] - '0');
      fraction_scale *= 10;
    }
    if (fraction_scale == 1) return std::nullopt;  // "64." is not a number
  }
  if (whole_digits == 0) return std::nullopt;
  while (pos < text.size() && text[pos] == ' ') ++pos;
  const std::string unit = text.substr(pos);
  static const std::pair<const char*, int64_t> kUnits[] = {
      {"", 1},
      {"B", 1},
      {"KB", 1000},
      {"kB", 1000},
      {"MB", 1000 * 1000},
      {"GB", 1000LL * 1000 * 1000},
      {"TB", 1000LL * 1000 * 1000 * 1000},
      {"KiB", 1LL << 10},
      {"MiB", 1LL << 20},
      {"GiB", 1LL << 30},
      {"TiB", 1LL << 40},
  };
  for (const auto& [name, multiplier] : kUnits) {
    if (unit != name) continue;
    const __int128 fraction_bytes = fraction * multiplier;
    if (fraction_bytes % fraction_scale != 0) return std::nullopt;  // not whole bytes
    const __int128 bytes = whole * multiplier + fraction_bytes / fraction_scale;
    if (bytes > std::numeric_limits<int64_t>::max()) return std::nullopt;
    return int64_t(bytes);
  }
  return std::nullopt;
}

std::string format_size(int64_t bytes) {
  static const std::pair<const char*, int64_t> kUnits[] = {{"TiB", int64_t(1) << 40},
                                                           {"GiB", int64_t(1) << 30},
                                                           {"MiB", int64_t(1) << 20},
                                                           {"KiB", int64_t(1) << 10},
                                                           {"TB", 1000LL * 1000 * 1000 * 1000},
                                                           {"GB", 1000LL * 1000 * 1000},
                                                           {"MB", 1000 * 1000},
                                                           {"KB", 1000}};
  for (const auto& [name, unit] : kUnits)
    if (bytes > 0 && bytes % unit == 0) return std::to_string(bytes / unit) + name;
  return std::to_string(bytes);
}

std::string format_real(double value) {
  if (!std::isfinite(value)) return value != value ? "nan" : value > 0 ? "inf" : "-inf";
  // The fewest significant digits that read back to the same double...
  char buffer[64];
  int digits = 1;
  for (; digits <= 17; ++digits) {
    std::snprintf(buffer, sizeof buffer, "%.*e", digits - 1, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  // ...written without an exponent where that stays short (1800, not
  // 1.8e+03; 0.0003), with one for very large or small magnitudes (1e-08).
  const int exponent = value == 0 ? 0 : std::atoi(std::strchr(buffer, 'e') + 1);
  if (exponent < -4 || exponent >= 16) return buffer;
  char fixed[64];
  std::snprintf(fixed, sizeof fixed, "%.*f", std::max(0, digits - 1 - exponent), value);
  return fixed;
}

std::optional<std::string> closest_word(const std::string& word,
                                        const std::vector<std::string>& candidates) {
  // Short words are too close to each other for more than one edit to mean a typo.
  const size_t allowed =
      word.size() <= 3 ? 1 : std::max<size_t>(2, std::min<size_t>(3, word.size() / 3));
  std::optional<std::string> best;
  size_t best_distance = allowed + 1;
  for (const std::string& candidate : candidates) {
    const size_t distance = edit_distance(lower(word), lower(candidate));
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

std::string join_words(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& word : words) out += (out.empty() ? "" : ", ") + word;
  return out;
}

std::string unknown_word_message(const std::string& what, const std::string& word,
                                 const std::vector<std::string>& known) {
  std::string message = "unknown " + what + " '" + word + "' (known: " + join_words(known);
  if (auto guess = closest_word(word, known)) message += "; did you mean " + *guess + "?";
  return message + ")";
}

}  // namespace cmpi::config
