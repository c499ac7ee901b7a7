// mkdtemp-based scratch directories and the tiny vocabulary writer (token
// strings are spelled with GPT-2's byte map, JSON-escaped).
#include "tests/data/data_test_util.h"

#include <stdlib.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "data/byte_to_unicode.h"
#include "data/json_reader.h"

namespace cmpi::data::testing {

ScratchDir::ScratchDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "cmpi-data-test-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  root_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(root_, ignored);
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out) throw std::runtime_error("cannot write " + path);
}

namespace {

std::string json_quoted(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

TinyVocabulary make_tiny_vocabulary(const std::vector<std::string>& merges) {
  const ByteToUnicode map;
  TinyVocabulary v;
  v.encoder_json = "{";
  int id = 0;
  for (int b = 0; b < 256; ++b) {
    v.encoder_json +=
        (id ? ", " : "") + json_quoted(map.utf8(uint8_t(b))) + ": " + std::to_string(id);
    ++id;
  }
  v.merges_text = "#version: 0.2\n";
  for (const std::string& merge : merges) {
    const size_t space = merge.find(' ');
    const std::string merged = merge.substr(0, space) + merge.substr(space + 1);
    v.encoder_json += ", " + json_quoted(merged) + ": " + std::to_string(id++);
    v.merges_text += merge + "\n";
  }
  v.encoder_json += ", \"<|endoftext|>\": " + std::to_string(id) + "}";
  return v;
}

}  // namespace cmpi::data::testing
