// The on-disk layout shared by Megatron-LM and GPT-NeoX "mmap" indexed
// datasets (PREFIX.bin holds the tokens back to back, PREFIX.idx describes
// them), as published in both projects' indexed_dataset.py:
//
//   .idx offset  size       field
//   0            9          magic            "MMIDIDX\0\0"
//   9            8          version          u64, must be 1
//   17           1          dtype            u8 code, table below
//   18           8          sequence count   u64 N
//   26           8          document count   u64 D
//   34           4*N        sizes            i32, tokens in each sequence
//   34+4N        8*N        pointers         i64, byte offset of each sequence in .bin
//   34+12N       8*D        document index   i64, sequence index where each document starts
//   34+12N+8D    end of file (nothing may follow)
// All integers little-endian, no padding.
//
// Document index convention: Megatron and NeoX write D = documents + 1
// entries, 0 first and N last, so document d spans sequences
// [doc[d], doc[d+1]). That is the only form written and accepted here: D >= 1,
// doc[0] = 0, non-decreasing, doc[D-1] = N. An empty dataset is N = 0, D = 1.
//
// dtype codes (Megatron-LM core's DType enum; GPT-NeoX agrees on 1-5 and 8
// but swaps the float codes: NeoX 6 = float32, 7 = float64, Megatron
// 6 = float64, 7 = float32). Codes 1-3 and 5 are integer types this project
// does not use for tokens; 6 and 7 are floats in both tables and never tokens.
//   1 uint8   2 int8   3 int16   4 int32 (tokens)   5 int64
//   6 float   7 float  8 uint16 (tokens)
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace cmpi::data {

enum class TokenDtype : uint8_t {
  kInt32 = 4,
  kUInt16 = 8,
};

constexpr char kIndexMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', '\0', '\0'};
constexpr uint64_t kIndexVersion = 1;
constexpr size_t kIndexHeaderBytes = 9 + 8 + 1 + 8 + 8;

// Bytes of one token of `dtype`.
size_t dtype_bytes(TokenDtype dtype);
const char* dtype_name(TokenDtype dtype);
// The largest token id `dtype` can hold.
uint64_t dtype_max_token(TokenDtype dtype);
// Parses "uint16"/"int32".
TokenDtype parse_dtype(const std::string& name);
// Describes any dtype code of the table above, token or not ("float32/float64
// (Megatron/NeoX disagree)"), for error messages.
std::string describe_dtype_code(uint8_t code);

// Raised for a dataset file that cannot be used; `path()` is the file at
// fault and `field()` the field of the layout above ("magic", "pointers",
// "document index", "tokens", ...). The message names both.
class DatasetError : public std::runtime_error {
 public:
  DatasetError(std::string path, std::string field, const std::string& what)
      : std::runtime_error(path + ": " + field + ": " + what),
        path_(std::move(path)),
        field_(std::move(field)) {}
  const std::string& path() const { return path_; }
  const std::string& field() const { return field_; }

 private:
  std::string path_;
  std::string field_;
};

}  // namespace cmpi::data
