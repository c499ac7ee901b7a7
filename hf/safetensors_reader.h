// SafetensorsReader: one .safetensors file opened for reading tensors by
// name. open() reads the 8-byte little-endian header length and the JSON
// header, and checks every entry before any data is read: offsets inside the
// file, a shape of whole numbers and, for the dtypes read() widens (F32, F16,
// BF16, F64), an element count that matches its data_offsets. read() then
// reads one tensor's bytes and widens them to float32 (F64 is rounded), so a
// model stored in half precision loads as float32; it refuses any other
// dtype, naming the tensor. Every error names the file and, where one is at
// fault, the tensor.
//
// Files that transformers and published checkpoints wrote also hold
// buffers that are not parameters: causal masks (`attention.bias`,
// `attention.masked_bias` of Pythia-era GPT-NeoX, `attn.bias`,
// `attn.masked_bias` of GPT-2), often stored as U8 or BOOL, and GPT-NeoX's
// `rotary_emb.inv_freq`. Nothing here reads them, so they are recognised by
// name (is_buffer_name) and listed apart. Any tensor the loader does not
// read (those buffers, or anything else a file carries) is skipped whatever
// its dtype: a dtype is refused only for a tensor that is read
// (HfPretrained checks its weights' dtypes when it opens the directory).
// Torch-free.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cmpi::hf {

struct SafetensorsEntry {
  std::string dtype;  // as the header says: "F32", "F16", "BF16", "F64", "U8", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets into the data after the header
};

class SafetensorsReader {
 public:
  // Throws std::runtime_error naming `path`.
  static SafetensorsReader open(const std::string& path);
  // The checks of open() on a header already read: `header` is the JSON
  // text, `data_bytes` what follows it in the file. open() reads the length
  // and the header, then calls this; the fuzz target feeds it bytes directly.
  static SafetensorsReader from_header(const std::string& path, const std::string& header,
                                       uint64_t data_bytes);

  const std::string& path() const { return path_; }
  // The tensors, buffers excluded.
  const std::map<std::string, SafetensorsEntry>& entries() const { return entries_; }
  // The buffers open() skipped (is_buffer_name), sorted.
  const std::vector<std::string>& skipped_buffers() const { return skipped_buffers_; }
  // nullptr when the file has no tensor `name`.
  const SafetensorsEntry* find(const std::string& name) const;
  // The tensor's values as float32, row-major. Throws std::runtime_error
  // naming the file and the tensor.
  std::vector<float> read(const std::string& name) const;

 private:
  std::string path_;
  uint64_t data_start_ = 0;
  std::map<std::string, SafetensorsEntry> entries_;
  std::vector<std::string> skipped_buffers_;
};

// Whether `name` is one of the non-parameter buffers of GPT-NeoX or GPT-2
// files: its last two components are attention.bias,
// attention.masked_bias, attn.bias, attn.masked_bias or
// rotary_emb.inv_freq (whole components: GPT-2's attn.c_attn.bias is a
// parameter).
bool is_buffer_name(const std::string& name);

// Whether read() widens tensors of `dtype` (F32, F16, BF16, F64).
bool readable_dtype(const std::string& dtype);
// "dtype U8 is not supported for a weight (...)".
std::string unreadable_dtype_message(const std::string& dtype);

// "[768, 2304]".
std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace cmpi::hf
