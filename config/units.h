// Text helpers shared by the config reader, the planner and the reports:
// numbers for people ("1.65 TB", "12.3 ms"), sizes and reals that read back
// exactly ("64KiB", format_real), their whole-string parsers, and the
// "did you mean" word matching of error messages. One place, so that the
// progress line, the summary, the planner and error messages agree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cmpi::config {

// Numbers for people: "1.65 TB", "24.23 GB", "456 B" (decimal units, two
// decimals) and "12.3 ms", "850 us", "2.41 s".
std::string human_bytes(double bytes);
std::string human_seconds(double seconds);

// Whole-string parsers returning nullopt on anything malformed.
std::optional<int64_t> parse_integer(const std::string& text);
std::optional<double> parse_real(const std::string& text);
// Bytes: a non-negative number with an optional unit B, KB, MB, GB, TB
// (powers of 1000), KiB, MiB, GiB, TiB (powers of 1024); the result must be a
// whole number of bytes ("1.5KiB" = 1536).
std::optional<int64_t> parse_size(const std::string& text);
extern const char* const kSizeUnitsText;

// Formats a size with the largest unit that divides it, binary units first
// ("64KiB", "25MB", "1000001").
std::string format_size(int64_t bytes);
// Shortest decimal text that reads back as the same double, without an
// exponent for magnitudes in [1e-4, 1e16) ("1800", "0.0003", "9.7e-05").
std::string format_real(double value);

// The closest of `candidates` to `word` if it is a plausible typo of it.
std::optional<std::string> closest_word(const std::string& word,
                                        const std::vector<std::string>& candidates);
std::string join_words(const std::vector<std::string>& words);
// "unknown X 'w' (known: a, b, c; did you mean b?)"
std::string unknown_word_message(const std::string& what, const std::string& word,
                                 const std::vector<std::string>& known);

}  // namespace cmpi::config
