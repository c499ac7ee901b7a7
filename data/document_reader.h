// Reads the documents of cmpi-data's inputs, in order, one at a time:
//   JSONL  one JSON object per line, the document is its "text" string;
//          blank lines are skipped; anything else is an error naming the
//          file and line (not JSON, no "text" member, "text" not a string)
//   text   by default the whole file is one document; with
//          TextDocuments::kParagraphs, each run of non-blank lines is one
//          (lines that hold only whitespace separate documents and are
//          dropped; a paragraph keeps its lines' newlines)
// The format is chosen per file by extension (.jsonl, .json -> JSONL, other
// names -> text) unless forced.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace cmpi::data {

enum class InputFormat { kAuto, kJsonl, kText };
enum class TextDocuments { kFile, kParagraphs };

InputFormat parse_input_format(const std::string& name);
TextDocuments parse_text_documents(const std::string& name);

class DocumentReader {
 public:
  DocumentReader(std::vector<std::string> paths, InputFormat format, TextDocuments text_documents);

  // The next document's text; false after the last one. Throws
  // std::runtime_error "PATH:LINE: ..." for malformed input and "PATH: ..."
  // for files that cannot be read.
  bool next(std::string& text);

 private:
  bool open_next_file();
  bool next_jsonl(std::string& text);
  bool next_paragraph(std::string& text);
  bool read_whole_file(std::string& text);

  std::vector<std::string> paths_;
  InputFormat format_;
  TextDocuments text_documents_;
  size_t next_path_ = 0;
  std::string path_;  // the open file
  InputFormat file_format_ = InputFormat::kText;
  std::ifstream file_;
  bool file_open_ = false;
  uint64_t line_number_ = 0;
  std::string line_;
};

}  // namespace cmpi::data
