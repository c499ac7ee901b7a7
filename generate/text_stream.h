// TextStream: generated token ids to text as they come, for streaming to a
// terminal. A byte-level tokenizer (bytes, GPT-2's BPE, a byte-level
// tokenizer.json) can end a token inside a multi-byte UTF-8 character (a
// byte token, or a BPE piece that holds half of an emoji), so each push
// decodes every id so far and hands out only the new text up to the last
// complete character; the held-back bytes follow once their character is
// complete, or at finish(). A decoder whose output for a longer sequence
// does not start with its output for a shorter one (a SentencePiece-style
// decoder strips one leading space) is streamed from where the previous
// text ended, so a piece's leading space may differ from decoding the whole
// at once. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/tokenizer.h"

namespace cmpi::generate {

// The length of the longest prefix of `text` that does not end inside a
// UTF-8 character: an incomplete final sequence (a lead byte followed by
// fewer continuation bytes than it announces) is left out; other bytes,
// valid or not, are kept.
size_t complete_utf8_prefix(const std::string& text);

class TextStream {
 public:
  explicit TextStream(const data::Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  // The text `id` completes (maybe empty).
  std::string push(int64_t id);
  // What is still held back (bytes of an unfinished character).
  std::string finish();

 private:
  const data::Tokenizer& tokenizer_;
  std::vector<int32_t> ids_;
  size_t emitted_ = 0;  // bytes of the decoded text handed out
};

}  // namespace cmpi::generate
