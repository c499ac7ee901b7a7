// The texts the tokenizer.json reference tests encode with both HfTokenizer
// and Hugging Face's tokenizers library: fixed multilingual sentences, an
// adversarial set aimed at the Llama family's pre-tokenizers and byte
// fallback, and random compositions of short atoms. All are valid UTF-8
// (they travel to Python as JSON strings); bytes that are not UTF-8 are the
// unit tests' business.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cmpi::data::testing {

// GPT-2's adversarial set (contractions, whitespace runs, digits,
// punctuation), about 30 languages and scripts, NFD and jamo text, added
// tokens among whitespace, U+0085 and U+FEFF beside space runs and strip
// tokens.
const std::vector<std::string>& multilingual_texts();

// Whitespace runs with tabs, CR LF, lone CR and trailing spaces; digit runs
// of every length up to 13 (Llama 3 groups them by three) in several
// scripts; emoji with skin tones, ZWJ sequences, flags and keycaps;
// contractions in mixed case ('S, 'LL) and with U+017F long s; Devanagari,
// Arabic and Thai with combining marks; characters that no test tokenizer
// is trained on (Gothic, Cherokee, Egyptian hieroglyphs: byte fallback or
// unknown); "▁" itself; the Llama family's special tokens.
const std::vector<std::string>& adversarial_texts();

// `count` random compositions of up to 40 atoms (words, whitespace, digits,
// punctuation, multilingual characters, added tokens of every test file).
std::vector<std::string> random_texts(uint64_t seed, size_t count);

}  // namespace cmpi::data::testing
