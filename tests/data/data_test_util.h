// Helpers shared by the data tests: a scratch directory removed at the end of
// the test, whole-file reads and writes, and a tiny hand-made GPT-2
// vocabulary (all 256 byte tokens, a few merges, <|endoftext|>).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace cmpi::data::testing {

class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string path(const std::string& name) const { return (root_ / name).string(); }

 private:
  std::filesystem::path root_;
};

std::string read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::string& bytes);

// encoder.json and vocab.bpe text of a tiny vocabulary: the 256 byte tokens
// (ids 0..255 in byte order), then one id per merge in `merges` ("a b"
// lines, written in the given order = rank), then <|endoftext|>.
struct TinyVocabulary {
  std::string encoder_json;
  std::string merges_text;
};
TinyVocabulary make_tiny_vocabulary(const std::vector<std::string>& merges);

}  // namespace cmpi::data::testing
