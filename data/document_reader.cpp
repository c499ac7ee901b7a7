// Files are opened lazily, one after the other; JSONL and paragraph inputs
// are read line by line (std::getline), whole-file documents in one read.
#include "data/document_reader.h"

#include <sstream>
#include <stdexcept>

#include "data/json_reader.h"

namespace cmpi::data {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_blank_line(const std::string& line) {
  for (const char c : line) {
    if (c != ' ' && c != '\t' && c != '\r' && c != '\f' && c != '\v') return false;
  }
  return true;
}

}  // namespace

InputFormat parse_input_format(const std::string& name) {
  if (name == "auto") return InputFormat::kAuto;
  if (name == "jsonl") return InputFormat::kJsonl;
  if (name == "text") return InputFormat::kText;
  throw std::invalid_argument("unknown input format '" + name + "' (expected auto, jsonl or text)");
}

TextDocuments parse_text_documents(const std::string& name) {
  if (name == "file") return TextDocuments::kFile;
  if (name == "paragraphs") return TextDocuments::kParagraphs;
  throw std::invalid_argument("unknown text document split '" + name +
                              "' (expected file or paragraphs)");
}

DocumentReader::DocumentReader(std::vector<std::string> paths, InputFormat format,
                               TextDocuments text_documents)
    : paths_(std::move(paths)), format_(format), text_documents_(text_documents) {}

bool DocumentReader::open_next_file() {
  if (next_path_ == paths_.size()) return false;
  path_ = paths_[next_path_++];
  file_ = std::ifstream(path_, std::ios::binary);
  if (!file_) throw std::runtime_error(path_ + ": cannot open");
  file_open_ = true;
  line_number_ = 0;
  file_format_ = format_;
  if (file_format_ == InputFormat::kAuto) {
    file_format_ = ends_with(path_, ".jsonl") || ends_with(path_, ".json") ? InputFormat::kJsonl
                                                                           : InputFormat::kText;
  }
  return true;
}

bool DocumentReader::next(std::string& text) {
  while (true) {
    if (!file_open_ && !open_next_file()) return false;
    bool got;
    if (file_format_ == InputFormat::kJsonl) {
      got = next_jsonl(text);
    } else if (text_documents_ == TextDocuments::kParagraphs) {
      got = next_paragraph(text);
    } else {
      got = read_whole_file(text);
    }
    if (got) return true;
    if (file_.bad()) throw std::runtime_error(path_ + ": read error");
    file_open_ = false;
    file_.close();
  }
}

bool DocumentReader::next_jsonl(std::string& text) {
  while (std::getline(file_, line_)) {
    ++line_number_;
    if (is_blank_line(line_)) continue;
    const std::string where = path_ + ":" + std::to_string(line_number_) + ": ";
    JsonTextField field;
    try {
      field = read_jsonl_text(line_, text);
    } catch (const JsonError& e) {
      throw std::runtime_error(where + "not a JSON object: " + e.what());
    }
    if (field == JsonTextField::kMissing) throw std::runtime_error(where + "no \"text\" field");
    if (field == JsonTextField::kNotAString) {
      throw std::runtime_error(where + "\"text\" is not a string");
    }
    return true;
  }
  return false;
}

bool DocumentReader::next_paragraph(std::string& text) {
  text.clear();
  while (std::getline(file_, line_)) {
    ++line_number_;
    if (is_blank_line(line_)) {
      if (!text.empty()) return true;
      continue;
    }
    text += line_;
    if (!file_.eof()) text += '\n';  // getline consumed one
  }
  return !text.empty();
}

bool DocumentReader::read_whole_file(std::string& text) {
  if (file_.peek() == std::char_traits<char>::eof() && line_number_ > 0) return false;
  std::ostringstream s;
  s << file_.rdbuf();
  text = s.str();
  // rdbuf extraction of an empty file sets failbit; the file is still read.
  file_.clear();
  file_.setstate(std::ios::eofbit);
  line_number_ = 1;  // marks the file as consumed
  return true;
}

}  // namespace cmpi::data
