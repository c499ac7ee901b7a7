#include "data/gpt_sample_index_cache.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>

#include "data/checked_file_writer.h"
#include "data/indexed_dataset.h"
#include "data/mapped_file.h"

namespace cmpi::data {
namespace {

constexpr char kMagic[8] = {'C', 'M', 'P', 'I', 'G', 'S', 'I', '1'};

uint64_t fnv1a(const uint8_t* bytes, size_t size, uint64_t hash = 0xcbf29ce484222325ull) {
  for (size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ull;
  return hash;
}

std::string hex16(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", (unsigned long long)value);
  return text;
}

void append(std::vector<uint8_t>& out, const void* data, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  out.insert(out.end(), p, p + bytes);
}
void append_u64(std::vector<uint8_t>& out, uint64_t value) {
  append(out, &value, sizeof value);
}

// Reads from a byte buffer, throwing DatasetError at the first short read.
class Cursor {
 public:
  Cursor(const std::vector<uint8_t>& bytes, std::string source)
      : bytes_(bytes), source_(std::move(source)) {}
  void read(void* out, size_t size, const char* field) {
    if (size > bytes_.size() - at_) throw DatasetError(source_, field, "file is truncated");
    std::memcpy(out, bytes_.data() + at_, size);
    at_ += size;
  }
  uint64_t u64(const char* field) {
    uint64_t v;
    read(&v, sizeof v, field);
    return v;
  }
  std::vector<int64_t> array(uint64_t count, const char* field) {
    if (count > (bytes_.size() - at_) / sizeof(int64_t))
      throw DatasetError(source_, field, "length " + std::to_string(count) + " exceeds the file");
    std::vector<int64_t> values(count);
    read(values.data(), count * sizeof(int64_t), field);
    return values;
  }
  size_t at() const { return at_; }

 private:
  const std::vector<uint8_t>& bytes_;
  std::string source_;
  size_t at_ = 0;
};

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error(path + ": cannot read: " + std::strerror(errno));
  return bytes;
}

}  // namespace

std::vector<int64_t> sequence_lengths(const IndexedDataset& dataset, SequenceRange range) {
  std::vector<int64_t> lengths(range.size());
  for (size_t s = range.begin; s < range.end; ++s)
    lengths[s - range.begin] = int64_t(dataset.sequence_length(s));
  return lengths;
}

std::string gpt_sample_index_key(const IndexedDataset& dataset, const GptSampleIndexSpec& spec) {
  const MappedFile idx(dataset.idx_path());
  const MappedFile bin(dataset.bin_path());
  return "gpt-sample-index v1; idx fnv1a " + hex16(fnv1a(idx.data(), idx.size())) + " (" +
         std::to_string(idx.size()) + " bytes); bin " + std::to_string(bin.size()) +
         " bytes; split " + spec.split_name + " documents [" +
         std::to_string(spec.documents.begin) + ", " + std::to_string(spec.documents.end) +
         "); seq_len " + std::to_string(spec.seq_len) + "; samples " +
         std::to_string(spec.num_samples) + "; seed " + std::to_string(spec.seed);
}

std::string gpt_sample_index_cache_path(const std::string& dataset_prefix,
                                        const std::string& cache_dir,
                                        const GptSampleIndexSpec& spec, const std::string& key) {
  const std::filesystem::path prefix(dataset_prefix);
  const std::filesystem::path dir =
      cache_dir.empty() ? prefix.parent_path() : std::filesystem::path(cache_dir);
  const std::string hash = hex16(fnv1a(reinterpret_cast<const uint8_t*>(key.data()), key.size()));
  return (dir / (prefix.filename().string() + "." + spec.split_name + "." + hash + ".samples"))
      .string();
}

std::vector<uint8_t> serialize_gpt_sample_index(const GptSampleIndex& index,
                                                const std::string& key) {
  std::vector<uint8_t> out;
  append(out, kMagic, sizeof kMagic);
  append_u64(out, key.size());
  append(out, key.data(), key.size());
  for (const auto* array : {&index.document_index, &index.sample_index, &index.shuffle_index})
    append_u64(out, array->size());
  for (const auto* array : {&index.document_index, &index.sample_index, &index.shuffle_index})
    append(out, array->data(), array->size() * sizeof(int64_t));
  append_u64(out, fnv1a(out.data(), out.size()));
  return out;
}

GptSampleIndex parse_gpt_sample_index(const std::vector<uint8_t>& bytes, const std::string& key,
                                      const IndexedDataset& dataset, const GptSampleIndexSpec& spec,
                                      const std::string& source) {
  Cursor in(bytes, source);
  char magic[sizeof kMagic];
  in.read(magic, sizeof magic, "magic");
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0)
    throw DatasetError(source, "magic", "not a cmpi sample index (expected CMPIGSI1)");
  const uint64_t key_size = in.u64("key");
  if (key_size != key.size()) throw DatasetError(source, "key", "built for other inputs");
  std::string stored(key_size, '\0');
  in.read(stored.data(), key_size, "key");
  if (stored != key) throw DatasetError(source, "key", "built for other inputs: " + stored);
  const uint64_t documents = in.u64("lengths"), samples = in.u64("lengths"),
                 shuffle = in.u64("lengths");
  GptSampleIndex index;
  index.document_index = in.array(documents, "document index");
  index.sample_index = in.array(samples, "sample index");
  index.shuffle_index = in.array(shuffle, "shuffle index");
  const uint64_t digest = fnv1a(bytes.data(), in.at());
  if (in.u64("digest") != digest)
    throw DatasetError(source, "digest", "does not match the contents (corrupted file)");
  if (in.at() != bytes.size()) throw DatasetError(source, "digest", "bytes after the end");
  const SequenceRange sequences = sequences_of_documents(dataset, spec.documents);
  const std::string problem = check_gpt_sample_index(index, sequence_lengths(dataset, sequences),
                                                     sequences, spec.seq_len, spec.num_samples);
  if (!problem.empty()) throw DatasetError(source, "index", problem);
  return index;
}

CachedGptSampleIndex load_or_build_gpt_sample_index(const IndexedDataset& dataset,
                                                    const std::string& dataset_prefix,
                                                    const std::string& cache_dir,
                                                    const GptSampleIndexSpec& spec,
                                                    std::ostream* log) {
  CachedGptSampleIndex result;
  const std::string key = gpt_sample_index_key(dataset, spec);
  result.path = gpt_sample_index_cache_path(dataset_prefix, cache_dir, spec, key);
  std::error_code error;
  if (std::filesystem::exists(result.path, error)) {
    try {
      result.bytes = read_file(result.path);
      result.index = parse_gpt_sample_index(result.bytes, key, dataset, spec, result.path);
      result.loaded = true;
      return result;
    } catch (const std::exception& e) {
      if (log) *log << "warning: rebuilding the sample index cache: " << e.what() << "\n";
    }
  }
  const SequenceRange sequences = sequences_of_documents(dataset, spec.documents);
  result.index = build_gpt_sample_index(sequence_lengths(dataset, sequences), sequences,
                                        spec.seq_len, spec.num_samples, spec.seed);
  result.bytes = serialize_gpt_sample_index(result.index, key);
  const std::string temporary = result.path + ".tmp." + std::to_string(::getpid());
  try {
    CheckedFileWriter writer(temporary);
    writer.write(result.bytes.data(), result.bytes.size());
    writer.close();
    checked_rename(temporary, result.path);
  } catch (...) {
    std::filesystem::remove(temporary, error);
    throw;
  }
  return result;
}

}  // namespace cmpi::data
