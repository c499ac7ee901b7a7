#include "generate/text_stream.h"

namespace cmpi::generate {

size_t complete_utf8_prefix(const std::string& text) {
  // Look back over at most 3 continuation bytes (10xxxxxx) for a lead byte.
  const size_t size = text.size();
  size_t continuation = 0;
  while (continuation < 3 && continuation < size &&
         (static_cast<unsigned char>(text[size - 1 - continuation]) & 0xC0) == 0x80)
    ++continuation;
  if (continuation == size) return size;
  const auto lead = static_cast<unsigned char>(text[size - 1 - continuation]);
  size_t needed = 0;  // continuation bytes the lead byte announces
  if ((lead & 0xE0) == 0xC0)
    needed = 1;
  else if ((lead & 0xF0) == 0xE0)
    needed = 2;
  else if ((lead & 0xF8) == 0xF0)
    needed = 3;
  return needed > continuation ? size - 1 - continuation : size;
}

std::string TextStream::push(int64_t id) {
  ids_.push_back(int32_t(id));
  const std::string text = tokenizer_.decode(ids_);
  const size_t end = complete_utf8_prefix(text);
  if (end <= emitted_) return "";
  std::string fresh = text.substr(emitted_, end - emitted_);
  emitted_ = end;
  return fresh;
}

std::string TextStream::finish() {
  const std::string text = tokenizer_.decode(ids_);
  std::string rest = text.size() > emitted_ ? text.substr(emitted_) : "";
  emitted_ = text.size();
  return rest;
}

}  // namespace cmpi::generate
