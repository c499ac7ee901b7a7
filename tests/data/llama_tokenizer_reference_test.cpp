// The Llama family's tokenizer.json files against Hugging Face's tokenizers
// library itself (its Python binding in the project's environment), as
// hf_tokenizer_reference_test.cpp does for GPT-2's. hf_tokenizer_train.py
// builds the files with the library at test time, trained on the
// multilingual texts (nothing is downloaded):
//   llama3_style             byte-level BPE with Llama 3's Split pattern,
//                            ignore_merges, its special tokens after the
//                            vocabulary and <|begin_of_text|> put first
//   sentencepiece_llama2     Llama 2's / Mistral's shape: Prepend and Replace
//                            normalizers, byte fallback, fuse_unk, <s> first
//   sentencepiece_metaspace  the same with a Metaspace pre-tokenizer
//                            (prepend_scheme "first")
//   sentencepiece_unk        the library's SentencePieceBPETokenizer: NFKC,
//                            Metaspace "always", <unk> without byte fallback
// Each encodes the corpus of tokenizer_corpus.h to the library's ids, and
// decodes them to the library's text (hf_reference_check.h); cmpi-data
// converts documents to the same ids. Without the Python environment
// main() prints why and exits 77, which CTest reports as skipped.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>

#include "data/hf_tokenizer.h"
#include "data/indexed_dataset.h"
#include "tests/data/hf_reference_check.h"
#include "tests/data/python_reference.h"
#include "tests/data/tokenizer_corpus.h"

namespace cmpi::data {
namespace {

const std::string kWorkDir = CMPI_REFERENCE_WORK_DIR;

class LlamaTokenizerReference : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const JsonValue paths = testing::run_python(kWorkDir, "hf_tokenizer_train.py",
                                                testing::multilingual_texts(), {kWorkDir});
    for (const JsonValue& path : paths.items()) files_.push_back(path.text());
  }

  static std::string file(const std::string& name) { return kWorkDir + "/" + name + ".json"; }

  static std::vector<std::string> files_;
};

std::vector<std::string> LlamaTokenizerReference::files_;

TEST_F(LlamaTokenizerReference, MultilingualTexts) {
  testing::expect_same_as_hugging_face(kWorkDir, files_, testing::multilingual_texts());
}

TEST_F(LlamaTokenizerReference, AdversarialTexts) {
  testing::expect_same_as_hugging_face(kWorkDir, files_, testing::adversarial_texts());
}

TEST_F(LlamaTokenizerReference, RandomCompositions) {
  const uint64_t seed = uint64_t(std::random_device{}()) << 32 | std::random_device{}();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  testing::expect_same_as_hugging_face(kWorkDir, files_, testing::random_texts(seed, 2000));
}

// Each file is read as the family it belongs to: the end-of-document token
// each family uses, the beginning-of-text token its template adds.
TEST_F(LlamaTokenizerReference, EndAndBeginningOfTextTokens) {
  const auto expect_tokens = [](const std::string& path, const std::string& end,
                                const std::string& begin) {
    SCOPED_TRACE(path);
    const auto tokenizer = HfTokenizer::load(path);
    EXPECT_EQ(tokenizer->decode({tokenizer->end_of_document()}), "");
    std::vector<int32_t> ids, end_ids, begin_ids;
    tokenizer->encode("", ids);
    tokenizer->encode(end, end_ids);
    ASSERT_EQ(end_ids.size(), ids.size() + 1);
    EXPECT_EQ(end_ids.back(), tokenizer->end_of_document());
    if (begin.empty()) {
      EXPECT_TRUE(ids.empty());
    } else {
      tokenizer->encode(begin, begin_ids);
      EXPECT_EQ(ids, std::vector<int32_t>{begin_ids.back()});
    }
  };
  expect_tokens(file("llama3_style"), "<|end_of_text|>", "<|begin_of_text|>");
  expect_tokens(file("sentencepiece_llama2"), "</s>", "<s>");
  expect_tokens(file("sentencepiece_metaspace"), "</s>", "<s>");
  expect_tokens(file("sentencepiece_unk"), "</s>", "");
}

// cmpi-data goes through the same tokenizer: each JSONL document becomes
// the library's ids of its text (beginning-of-text token included) and the
// end-of-document id.
TEST_F(LlamaTokenizerReference, CmpiDataWritesTheLibrarysIds) {
  std::vector<std::string> documents = testing::adversarial_texts();
  const auto& multilingual = testing::multilingual_texts();
  documents.insert(documents.end(), multilingual.begin(), multilingual.begin() + 20);
  std::string jsonl;
  for (const std::string& text : documents) {
    jsonl += "{\"text\": " + testing::json_string(text) + "}\n";
  }
  const std::string input = kWorkDir + "/documents.jsonl";
  std::ofstream(input, std::ios::binary) << jsonl;
  for (const std::string name : {"llama3_style", "sentencepiece_llama2"}) {
    SCOPED_TRACE(name);
    const std::string prefix = kWorkDir + "/" + name + "_dataset";
    const std::string command = std::string(CMPI_DATA_TOOL) + " --input " + input +
                                " --output-prefix " + prefix + " --tokenizer " + file(name) +
                                " --workers 2 --verify --quiet";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    const JsonValue answer =
        testing::run_python(kWorkDir, "hf_tokenizer_reference.py", documents, {file(name)});
    const auto reference = testing::id_lists(*answer.items()[0].find("ids"));
    const int32_t end = HfTokenizer::load(file(name))->end_of_document();
    const IndexedDataset dataset(prefix);
    ASSERT_EQ(dataset.documents(), documents.size());
    std::vector<int32_t> tokens;
    for (size_t d = 0; d < documents.size(); ++d) {
      dataset.copy_sequence(dataset.document_begin(d), tokens);
      std::vector<int32_t> expected = reference[d];
      expected.push_back(end);
      EXPECT_EQ(tokens, expected) << "document " << d << ": " << testing::json_string(documents[d]);
    }
  }
}

}  // namespace
}  // namespace cmpi::data

int main(int argc, char** argv) {
  const std::string skip = cmpi::data::testing::check_python({"tokenizers"});
  if (!skip.empty()) {
    std::fprintf(stderr, "SKIPPED: Llama tokenizer.json reference test: %s\n", skip.c_str());
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
