// Shared state is one mutex and one condition variable: the batch queue
// (reader -> workers), the finished batches keyed by their input position
// (workers -> writer), counters and the stop flag. Every wait also wakes on
// `stop`, so an error anywhere ends all threads promptly.
#include "data/dataset_conversion.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "data/indexed_dataset_builder.h"

namespace cmpi::data {
namespace {

constexpr size_t kBatchBytes = size_t(1) << 20;
constexpr size_t kBatchDocuments = 4096;

struct Batch {
  uint64_t position = 0;
  std::vector<std::string> texts;
  uint64_t bytes = 0;
};

struct TokenizedBatch {
  std::vector<std::vector<int32_t>> documents;
  uint64_t bytes = 0;
};

class ConversionState {
 public:
  explicit ConversionState(size_t window) : window_(window) {}

  // Reader side. False if the conversion was stopped.
  bool push(Batch batch) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return stop_ || batches_read_ - batches_written_ < window_; });
    if (stop_) return false;
    batch.position = batches_read_++;
    queue_.push_back(std::move(batch));
    changed_.notify_all();
    return true;
  }
  void input_done() {
    std::lock_guard<std::mutex> lock(mutex_);
    input_done_ = true;
    changed_.notify_all();
  }

  // Worker side. False when there is nothing left to do.
  bool pop(Batch& batch) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return stop_ || !queue_.empty() || input_done_; });
    if (stop_ || queue_.empty()) return false;
    batch = std::move(queue_.front());
    queue_.pop_front();
    return true;
  }
  void finish(uint64_t position, TokenizedBatch result) {
    std::lock_guard<std::mutex> lock(mutex_);
    finished_.emplace(position, std::move(result));
    changed_.notify_all();
  }

  // Writer side: the next batch in input order; false at the end or on stop.
  bool next_in_order(TokenizedBatch& result) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] {
      return stop_ || finished_.count(batches_written_) ||
             (input_done_ && batches_written_ == batches_read_);
    });
    if (stop_ || !finished_.count(batches_written_)) return false;
    auto found = finished_.find(batches_written_);
    result = std::move(found->second);
    finished_.erase(found);
    return true;
  }
  void written() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++batches_written_;
    changed_.notify_all();
  }

  void fail(std::exception_ptr error) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) error_ = error;
    stop_ = true;
    changed_.notify_all();
  }
  std::exception_ptr error() {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  const size_t window_;
  std::deque<Batch> queue_;
  std::map<uint64_t, TokenizedBatch> finished_;
  uint64_t batches_read_ = 0;
  uint64_t batches_written_ = 0;
  bool input_done_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
};

void read_batches(const ConversionOptions& options, ConversionState& state) {
  try {
    DocumentReader reader(options.inputs, options.format, options.text_documents);
    Batch batch;
    std::string text;
    while (reader.next(text)) {
      batch.bytes += text.size();
      batch.texts.push_back(std::move(text));
      if (batch.bytes >= kBatchBytes || batch.texts.size() >= kBatchDocuments) {
        if (!state.push(std::move(batch))) return;
        batch = Batch();
      }
    }
    if (!batch.texts.empty() && !state.push(std::move(batch))) return;
    state.input_done();
  } catch (...) {
    state.fail(std::current_exception());
  }
}

void tokenize_batches(const Tokenizer& prototype, ConversionState& state) {
  try {
    const std::unique_ptr<Tokenizer> tokenizer = prototype.clone();
    Batch batch;
    while (state.pop(batch)) {
      TokenizedBatch result;
      result.bytes = batch.bytes;
      result.documents.resize(batch.texts.size());
      for (size_t i = 0; i < batch.texts.size(); ++i) {
        tokenizer->encode(batch.texts[i], result.documents[i]);
        result.documents[i].push_back(tokenizer->end_of_document());
      }
      state.finish(batch.position, std::move(result));
    }
  } catch (...) {
    state.fail(std::current_exception());
  }
}

void print_progress(std::ostream& out, const ConversionReport& r, bool final_line) {
  char line[160];
  std::snprintf(line, sizeof line, "cmpi-data: %llu documents, %.1f MB, %llu tokens, %.0f tokens/s",
                (unsigned long long)r.documents, double(r.input_bytes) / 1e6,
                (unsigned long long)r.tokens, r.tokens_per_second());
  out << line << (final_line ? "\n" : "\r") << std::flush;
}

}  // namespace

TokenDtype default_dtype(uint64_t vocab_size) {
  return vocab_size <= 65536 ? TokenDtype::kUInt16 : TokenDtype::kInt32;
}

ConversionReport convert_to_indexed_dataset(const ConversionOptions& options,
                                            const Tokenizer& tokenizer, std::ostream* progress) {
  if (options.inputs.empty()) throw std::invalid_argument("no input files");
  if (options.workers < 1) throw std::invalid_argument("workers must be at least 1");
  ConversionReport report;
  report.dtype = options.dtype.value_or(default_dtype(tokenizer.vocab_size()));
  if (tokenizer.vocab_size() - 1 > dtype_max_token(report.dtype)) {
    throw std::invalid_argument(std::string("a vocabulary of ") +
                                std::to_string(tokenizer.vocab_size()) + " ids does not fit " +
                                dtype_name(report.dtype));
  }
  IndexedDatasetBuilder builder(options.output_prefix, report.dtype);

  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  Clock::time_point last_progress = start;
  const size_t workers = size_t(options.workers);
  ConversionState state(4 * workers);
  std::thread reader(read_batches, std::cref(options), std::ref(state));
  std::vector<std::thread> pool;
  for (size_t w = 0; w < workers; ++w) {
    pool.emplace_back(tokenize_batches, std::cref(tokenizer), std::ref(state));
  }
  try {
    TokenizedBatch batch;
    while (state.next_in_order(batch)) {
      for (const std::vector<int32_t>& document : batch.documents) {
        builder.add_document(document);
        report.tokens += document.size();
      }
      report.documents += batch.documents.size();
      report.input_bytes += batch.bytes;
      state.written();
      const Clock::time_point now = Clock::now();
      if (progress && options.progress_interval_s > 0 &&
          std::chrono::duration<double>(now - last_progress).count() >=
              options.progress_interval_s) {
        report.seconds = std::chrono::duration<double>(now - start).count();
        print_progress(*progress, report, false);
        last_progress = now;
      }
    }
  } catch (...) {
    state.fail(std::current_exception());
  }
  reader.join();
  for (std::thread& t : pool) t.join();
  if (const std::exception_ptr error = state.error()) std::rethrow_exception(error);
  builder.finalize();
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (progress) print_progress(*progress, report, true);
  return report;
}

}  // namespace cmpi::data
