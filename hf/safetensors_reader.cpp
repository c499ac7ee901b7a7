#include "hf/safetensors_reader.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <stdexcept>

#include "data/json_value.h"

namespace cmpi::hf {
namespace {

// Headers beyond this are refused before reading them (a corrupt length).
constexpr uint64_t kMaxHeaderBytes = uint64_t(100) << 20;

size_t dtype_bytes(const std::string& dtype) {
  if (dtype == "F32") return 4;
  if (dtype == "F16" || dtype == "BF16") return 2;
  if (dtype == "F64") return 8;
  return 0;
}

float from_half(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float value;
  if (exponent == 0) {
    value = std::ldexp(float(mantissa), -24);  // zero or subnormal
  } else if (exponent == 31) {
    value =
        mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    value = std::ldexp(float(mantissa | 0x400), int(exponent) - 25);
  }
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  bits |= sign;
  std::memcpy(&value, &bits, 4);
  return value;
}

float from_bfloat16(uint16_t b) {
  const uint32_t bits = uint32_t(b) << 16;
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}

}  // namespace

bool is_buffer_name(const std::string& name) {
  // The last two dot-separated components, whole.
  const size_t last_dot = name.rfind('.');
  if (last_dot == std::string::npos || last_dot == 0) return false;
  const size_t before = name.rfind('.', last_dot - 1);
  const size_t start = before == std::string::npos ? 0 : before + 1;
  const std::string module = name.substr(start, last_dot - start), leaf = name.substr(last_dot + 1);
  if (module == "attention" || module == "attn") return leaf == "bias" || leaf == "masked_bias";
  return module == "rotary_emb" && leaf == "inv_freq";
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

SafetensorsReader SafetensorsReader::open(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail(path, "cannot open (" + std::string(std::strerror(errno)) + ")");
  const uint64_t file_bytes = uint64_t(in.tellg());
  in.seekg(0);
  uint64_t header_bytes = 0;
  if (file_bytes < 8 || !in.read(reinterpret_cast<char*>(&header_bytes), 8))
    fail(path, "not a safetensors file (shorter than its 8-byte header length)");
  if (header_bytes > kMaxHeaderBytes || 8 + header_bytes > file_bytes)
    fail(path, "not a safetensors file (header length " + std::to_string(header_bytes) +
                   " does not fit the file's " + std::to_string(file_bytes) + " bytes)");
  std::string header(header_bytes, '\0');
  if (!in.read(header.data(), std::streamsize(header_bytes))) fail(path, "cannot read the header");
  SafetensorsReader reader = from_header(path, header, file_bytes - 8 - header_bytes);
  reader.data_start_ = 8 + header_bytes;
  return reader;
}

SafetensorsReader SafetensorsReader::from_header(const std::string& path, const std::string& header,
                                                 uint64_t data_bytes) {
  data::JsonValue json;
  try {
    json = data::JsonValue::parse(header);
  } catch (const std::exception& e) {
    fail(path, std::string("header is not JSON: ") + e.what());
  }
  if (json.kind() != data::JsonValue::Kind::kObject) fail(path, "header is not a JSON object");
  SafetensorsReader reader;
  reader.path_ = path;
  for (const auto& member : json.members()) {
    // Named, not a structured binding: the lambda below captures it (which
    // C++17 allows for variables only; clang refuses the binding).
    const std::string& name = member.first;
    const data::JsonValue& value = member.second;
    if (name == "__metadata__") continue;
    const auto bad = [&](const std::string& what) { fail(path, "tensor " + name + ": " + what); };
    const auto* dtype = value.find("dtype");
    const auto* shape = value.find("shape");
    const auto* offsets = value.find("data_offsets");
    if (!dtype || dtype->kind() != data::JsonValue::Kind::kString || !shape ||
        shape->kind() != data::JsonValue::Kind::kArray || !offsets ||
        offsets->kind() != data::JsonValue::Kind::kArray || offsets->items().size() != 2)
      bad("needs dtype, shape and data_offsets [begin, end]");
    SafetensorsEntry entry;
    entry.dtype = dtype->text();
    for (const auto& o : offsets->items())
      if (!o.exact_integer() || *o.exact_integer() < 0) bad("data_offsets are not byte offsets");
    entry.begin = uint64_t(*offsets->items()[0].exact_integer());
    entry.end = uint64_t(*offsets->items()[1].exact_integer());
    if (entry.end < entry.begin || entry.end > data_bytes)
      bad("data_offsets [" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) +
          "] lie outside the file's " + std::to_string(data_bytes) + " data bytes");
    // A mask or inv_freq buffer is never read: its dtype (U8, BOOL, ...)
    // and shape do not matter, only that the header places it in the file.
    if (is_buffer_name(name)) {
      reader.skipped_buffers_.push_back(name);
      continue;
    }
    // A dtype read() cannot widen (U8, BOOL, I64, ...) is refused only when
    // the tensor is read: a tensor the loader never asks for is skipped
    // whatever its dtype.
    const size_t element_bytes = dtype_bytes(entry.dtype);
    uint64_t count = 1;
    // A product past 2^64 would wrap and could match the offsets by chance.
    bool has_zero = false, overflows = false;
    for (const auto& d : shape->items()) {
      if (!d.exact_integer() || *d.exact_integer() < 0 ||
          d.text().find_first_of(".eE-") != std::string::npos)
        bad("shape holds something other than whole numbers of at most 2^53");
      const uint64_t extent = uint64_t(*d.exact_integer());
      entry.shape.push_back(int64_t(extent));
      if (extent == 0)
        has_zero = true;
      else if (count > std::numeric_limits<uint64_t>::max() / extent)
        overflows = true;
      count *= extent;
    }
    if ((overflows && !has_zero) ||
        (element_bytes != 0 && count > std::numeric_limits<uint64_t>::max() / element_bytes))
      bad("shape " + shape_text(entry.shape) + " holds more elements than any file");
    if (element_bytes != 0 && entry.end - entry.begin != count * element_bytes)
      bad("shape " + shape_text(entry.shape) + " of " + entry.dtype + " needs " +
          std::to_string(count * element_bytes) + " bytes, data_offsets give " +
          std::to_string(entry.end - entry.begin));
    reader.entries_[name] = std::move(entry);
  }
  std::sort(reader.skipped_buffers_.begin(), reader.skipped_buffers_.end());
  return reader;
}

const SafetensorsEntry* SafetensorsReader::find(const std::string& name) const {
  const auto found = entries_.find(name);
  return found == entries_.end() ? nullptr : &found->second;
}

bool readable_dtype(const std::string& dtype) {
  return dtype_bytes(dtype) != 0;
}

std::string unreadable_dtype_message(const std::string& dtype) {
  return "dtype " + dtype +
         " is not supported for a weight (F32, F16, BF16 or F64; tensors the loader does not "
         "read are skipped whatever their dtype)";
}

std::vector<float> SafetensorsReader::read(const std::string& name) const {
  const SafetensorsEntry* entry = find(name);
  if (!entry) fail(path_, "holds no tensor " + name);
  if (!readable_dtype(entry->dtype))
    fail(path_, "tensor " + name + ": " + unreadable_dtype_message(entry->dtype));
  std::string bytes(entry->end - entry->begin, '\0');
  std::ifstream in(path_, std::ios::binary);
  in.seekg(std::streamoff(data_start_ + entry->begin));
  if (!in || !in.read(bytes.data(), std::streamsize(bytes.size())))
    fail(path_, "cannot read tensor " + name);
  const size_t count = bytes.size() / dtype_bytes(entry->dtype);
  std::vector<float> values(count);
  const char* at = bytes.data();
  if (entry->dtype == "F32") {
    std::memcpy(values.data(), at, bytes.size());  // little-endian hosts only
  } else if (entry->dtype == "F64") {
    for (size_t i = 0; i < count; ++i) {
      double v;
      std::memcpy(&v, at + 8 * i, 8);
      values[i] = float(v);
    }
  } else {
    const bool half = entry->dtype == "F16";
    for (size_t i = 0; i < count; ++i) {
      uint16_t v;
      std::memcpy(&v, at + 2 * i, 2);
      values[i] = half ? from_half(v) : from_bfloat16(v);
    }
  }
  return values;
}

}  // namespace cmpi::hf
