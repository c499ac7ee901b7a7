#include "checkpoint/shard_file.h"

#include <cstring>
#include <stdexcept>

namespace cmpi::checkpoint {
namespace {

constexpr char kMagic[8] = {'C', 'M', 'P', 'I', 'S', 'H', 'R', 'D'};
constexpr uint32_t kVersion = 2;  // 2: rank state after the entries

// The build targets little-endian hosts only (x86-64, aarch64), so values are
// copied as they are in memory.
static_assert(sizeof(float) == 4, "float32 expected");

template <typename T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

void put_floats(std::string& out, const std::vector<float>& values) {
  out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

class Reader {
 public:
  Reader(const std::string& bytes, const std::string& file) : bytes_(bytes), file_(file) {}

  template <typename T>
  T get(const char* what) {
    T value;
    std::memcpy(&value, need(sizeof value, what), sizeof value);
    return value;
  }
  const char* need(size_t n, const char* what) {
    if (n > bytes_.size() - at_)
      fail(std::string("truncated: ") + what + " needs " + std::to_string(n) + " bytes at byte " +
           std::to_string(at_) + ", the file has " + std::to_string(bytes_.size()));
    const char* p = bytes_.data() + at_;
    at_ += n;
    return p;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(file_ + ": " + what);
  }
  bool done() const { return at_ == bytes_.size(); }
  size_t remaining() const { return bytes_.size() - at_; }

 private:
  const std::string& bytes_;
  const std::string& file_;
  size_t at_ = 0;
};

}  // namespace

std::string encode_shard(const std::vector<ShardEntry>& entries, const RankState& rank_state) {
  std::string out(kMagic, sizeof kMagic);
  put(out, kVersion);
  put(out, uint32_t(entries.size()));
  for (const auto& e : entries) {
    put(out, uint32_t(e.name.size()));
    out += e.name;
    put(out, uint32_t(e.slice.global_shape.size()));
    for (int64_t d : e.slice.global_shape) put(out, d);
    put(out, e.slice.split_dim);
    put(out, e.slice.index);
    put(out, e.slice.count);
    put(out, e.offset);
    put(out, uint64_t(e.values.size()));
    put_floats(out, e.values);
    put_floats(out, e.exp_avg);
    put_floats(out, e.exp_avg_sq);
  }
  put(out, uint32_t(rank_state.size()));
  for (const auto& [name, bytes] : rank_state) {
    put(out, uint32_t(name.size()));
    out += name;
    put(out, uint64_t(bytes.size()));
    out += bytes;
  }
  return out;
}

std::vector<ShardEntry> decode_shard(const std::string& bytes, const std::string& file,
                                     RankState* rank_state) {
  Reader in(bytes, file);
  if (std::memcmp(in.need(sizeof kMagic, "magic"), kMagic, sizeof kMagic) != 0)
    in.fail("not a cmpi-train shard (bad magic)");
  const auto version = in.get<uint32_t>("version");
  if (version != 1 && version != kVersion)
    in.fail("shard format version " + std::to_string(version) + ", this build reads 1 to " +
            std::to_string(kVersion));
  const auto count = in.get<uint32_t>("entry count");
  std::vector<ShardEntry> entries;
  for (uint32_t i = 0; i < count; ++i) {
    ShardEntry e;
    const auto name_bytes = in.get<uint32_t>("name length");
    e.name.assign(in.need(name_bytes, "name"), name_bytes);
    const auto ndim = in.get<uint32_t>("rank of the shape");
    if (ndim > 8) in.fail("entry " + e.name + ": shape of " + std::to_string(ndim) + " dims");
    for (uint32_t d = 0; d < ndim; ++d) e.slice.global_shape.push_back(in.get<int64_t>("shape"));
    e.slice.split_dim = in.get<int32_t>("split dim");
    e.slice.index = in.get<int32_t>("slice index");
    e.slice.count = in.get<int32_t>("slice count");
    try {
      e.slice.validate("entry " + e.name);
    } catch (const std::invalid_argument& error) {
      in.fail(error.what());
    }
    e.offset = in.get<uint64_t>("offset");
    const auto length = in.get<uint64_t>("length");
    if (e.offset > uint64_t(e.slice.numel()) || length > uint64_t(e.slice.numel()) - e.offset)
      in.fail("entry " + e.name + ": elements [" + std::to_string(e.offset) + ", " +
              std::to_string(e.offset + length) + ") outside its slice of " +
              std::to_string(e.slice.numel()));
    // The three runs must be in the file before any is allocated: a length
    // field alone must not make the reader allocate what no file holds.
    if (length > in.remaining() / (3 * sizeof(float)))
      in.fail("truncated: entry " + e.name + " holds " + std::to_string(length) +
              " elements (values and two moments), but only " + std::to_string(in.remaining()) +
              " bytes follow");
    for (auto* values : {&e.values, &e.exp_avg, &e.exp_avg_sq}) {
      values->resize(size_t(length));
      const char* from = in.need(size_t(length) * sizeof(float), "values");
      // An empty vector's data() may be null, which memcpy must not get
      // even for 0 bytes.
      if (length != 0) std::memcpy(values->data(), from, size_t(length) * sizeof(float));
    }
    entries.push_back(std::move(e));
  }
  RankState state;
  if (version >= 2) {
    const auto states = in.get<uint32_t>("rank state count");
    for (uint32_t i = 0; i < states; ++i) {
      const auto name_bytes = in.get<uint32_t>("rank state name length");
      std::string name(in.need(name_bytes, "rank state name"), name_bytes);
      const auto size = in.get<uint64_t>("rank state size");
      if (size > bytes.size())
        in.fail("rank state " + name + ": " + std::to_string(size) + " bytes");
      state[name].assign(in.need(size_t(size), "rank state bytes"), size_t(size));
    }
  }
  if (!in.done()) in.fail("trailing bytes after the last entry");
  if (rank_state) *rank_state = std::move(state);
  return entries;
}

}  // namespace cmpi::checkpoint
