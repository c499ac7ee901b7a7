// Identical token ids against Hugging Face's tokenizers library itself (the
// Rust implementation, through its Python binding in the project's Python
// environment): hf_tokenizer_reference.py reads each file with
// Tokenizer.from_file and encodes every text with encode(text).ids. GPT-2's
// encoder.json and vocab.bpe come from its published BPE ranks, derived into
// the build tree by gpt2_vocab_files.py. Without the Python environment or
// the ranks main() prints why and exits 77, which CTest reports as skipped.
//
// From GPT-2's vocabulary the test writes three tokenizer.json files:
//   gpt2_string_merges  GPT-2's own layout: "a b" merges, ByteLevel
//                       pre-tokenizer, post-processor and decoder,
//                       <|endoftext|> as a special added token
//   gpt2_pair_merges    [a, b] merges and the newer pre-tokenizer spelling,
//                       a Split by GPT-2's pattern then ByteLevel
//   neox_added_tokens   GPT-NeoX's shape: an NFC normalizer, add_prefix_space,
//                       special tokens matched in raw text, runs of spaces as
//                       added tokens matched in normalized text, lstrip and
//                       rstrip tokens, and added tokens whose content is
//                       not NFC (matched after normalizing it)
// and encodes the corpus of tokenizer_corpus.h (fixed sentences in 30-odd
// scripts, the adversarial set, random compositions of multilingual,
// whitespace and added-token atoms) with each file, in one Python process,
// comparing the id lists and the decoded texts with HfTokenizer's
// (hf_reference_check.h). The Llama family's files are
// llama_tokenizer_reference_test.cpp's.
//
// U+0085 (NEL, White_Space) and U+FEFF (BOM, not White_Space) are among the
// texts, next to words and to lstrip/rstrip tokens: the JavaScript peer this
// test used before disagreed with the Rust library on both.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "data/hf_tokenizer.h"
#include "data/hf_tokenizer_file.h"
#include "tests/data/hf_reference_check.h"
#include "tests/data/python_reference.h"
#include "tests/data/tokenizer_corpus.h"

namespace cmpi::data {
namespace {

using testing::json_string;

const std::string kWorkDir = CMPI_REFERENCE_WORK_DIR;
const std::string kEncoderDir = kWorkDir + "/gpt2";

struct Merge {
  std::string left, right;
};

std::vector<Merge> gpt2_merges() {
  std::istringstream lines(testing::read_all(kEncoderDir + "/vocab.bpe"));
  std::vector<Merge> merges;
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    const size_t space = line.find(' ');
    merges.push_back({line.substr(0, space), line.substr(space + 1)});
  }
  return merges;
}

struct FileShape {
  std::string name;
  bool pair_merges;
  std::string added_tokens, normalizer, pre_tokenizer, post_processor, decoder;
};

std::string tokenizer_json(const FileShape& shape, const std::string& encoder_json,
                           const std::vector<Merge>& merges) {
  std::string json = "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null,\n";
  json += "\"added_tokens\": " + shape.added_tokens + ",\n";
  json += "\"normalizer\": " + shape.normalizer + ",\n";
  json += "\"pre_tokenizer\": " + shape.pre_tokenizer + ",\n";
  json += "\"post_processor\": " + shape.post_processor + ",\n";
  json += "\"decoder\": " + shape.decoder + ",\n";
  json +=
      "\"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, "
      "\"continuing_subword_prefix\": \"\", \"end_of_word_suffix\": \"\", \"fuse_unk\": false, "
      "\"byte_fallback\": false, \"vocab\": " +
      encoder_json + ",\n\"merges\": [";
  for (size_t i = 0; i < merges.size(); ++i) {
    json += i ? ",\n" : "\n";
    json += shape.pair_merges
                ? "[" + json_string(merges[i].left) + ", " + json_string(merges[i].right) + "]"
                : json_string(merges[i].left + " " + merges[i].right);
  }
  return json + "]}}\n";
}

std::string added_token(int id, const std::string& content, bool special, bool normalized,
                        bool lstrip = false, bool rstrip = false) {
  const auto flag = [](bool b) { return b ? "true" : "false"; };
  return std::string("{\"id\": ") + std::to_string(id) + ", \"content\": " + json_string(content) +
         ", \"single_word\": false, \"lstrip\": " + flag(lstrip) + ", \"rstrip\": " + flag(rstrip) +
         ", \"normalized\": " + flag(normalized) + ", \"special\": " + flag(special) + "}";
}

const char* kByteLevel =
    "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, "
    "\"use_regex\": true}";

std::vector<FileShape> file_shapes() {
  const std::string eot_special_normalized =
      "[" + added_token(50256, "<|endoftext|>", true, true) + "]";
  std::string neox_tokens =
      "[" + added_token(50256, "<|endoftext|>", true, false) + ",\n" +
      added_token(50257, "<|padding|>", true, false) + ",\n" +
      added_token(50258, "  ", false, true) + ",\n" + added_token(50259, "    ", false, true) +
      ",\n" + added_token(50260, "        ", false, true) + ",\n" +
      added_token(50261, "<mask>", true, false, true, false) + ",\n" +
      added_token(50262, "[SEP]", true, false, false, true) + ",\n" +
      added_token(50263, "cafe\xCC\x81", false, true) + ",\n" +  // NFD
      added_token(50264,
                  "Gr\xC3\xBC\xC3\x9F"
                  "e",
                  false, true) +
      ",\n" +
      added_token(50265, "\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB",  // 한 as jamo
                  false, true) +
      "]";
  return {
      {"gpt2_string_merges", false, eot_special_normalized, "null", kByteLevel, kByteLevel,
       kByteLevel},
      {"gpt2_pair_merges", true, eot_special_normalized, "null",
       "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": "
       "{\"Regex\": " +
           json_string(kGpt2SplitPattern) +
           "}, \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": \"ByteLevel\", "
           "\"add_prefix_space\": false, \"trim_offsets\": true, \"use_regex\": false}]}",
       "null", kByteLevel},
      {"neox_added_tokens", false, neox_tokens, "{\"type\": \"NFC\"}",
       "{\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"trim_offsets\": true, "
       "\"use_regex\": true}",
       kByteLevel, kByteLevel},
  };
}

class HfTokenizerReference : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string encoder_json = testing::read_all(kEncoderDir + "/encoder.json");
    const std::vector<Merge> merges = gpt2_merges();
    for (const FileShape& shape : file_shapes()) {
      const std::string path = kWorkDir + "/" + shape.name + ".json";
      std::ofstream(path, std::ios::binary) << tokenizer_json(shape, encoder_json, merges);
      files_.push_back(path);
    }
  }

  static std::vector<std::string> files_;
};

std::vector<std::string> HfTokenizerReference::files_;

TEST_F(HfTokenizerReference, MultilingualTexts) {
  testing::expect_same_as_hugging_face(kWorkDir, files_, testing::multilingual_texts());
}

TEST_F(HfTokenizerReference, AdversarialTexts) {
  testing::expect_same_as_hugging_face(kWorkDir, files_, testing::adversarial_texts());
}

TEST_F(HfTokenizerReference, RandomCompositions) {
  const uint64_t seed = uint64_t(std::random_device{}()) << 32 | std::random_device{}();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  testing::expect_same_as_hugging_face(kWorkDir, files_, testing::random_texts(seed, 2000));
}

// Without added tokens or a normalizer in the way, decoding inverts encoding.
TEST_F(HfTokenizerReference, DecodeInvertsEncode) {
  const auto tokenizer = HfTokenizer::load(files_[0]);
  for (const std::string& text : testing::multilingual_texts()) {
    if (text.find("<|endoftext|>") != std::string::npos) continue;
    std::vector<int32_t> ids;
    tokenizer->encode(text, ids);
    EXPECT_EQ(tokenizer->decode(ids), text);
  }
}

}  // namespace
}  // namespace cmpi::data

int main(int argc, char** argv) {
  try {
    const std::string skip =
        cmpi::data::testing::prepare_gpt2_reference({"tokenizers"}, cmpi::data::kEncoderDir);
    if (!skip.empty()) {
      std::fprintf(stderr, "SKIPPED: tokenizer.json reference test: %s\n", skip.c_str());
      return 77;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tokenizer.json reference test: %s\n", e.what());
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
