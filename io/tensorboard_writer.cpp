#include "io/tensorboard_writer.h"

#include <unistd.h>

#include <chrono>

#include "io/checked_file.h"
#include "io/crc32c.h"
#include "io/directories.h"
#include "io/tensorboard_event.pb.h"

namespace cmpi::io {
namespace {

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

void put_le32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(char((v >> (8 * i)) & 0xFFu));
}

tensorboard::Event event_now(int64_t step) {
  tensorboard::Event event;
  event.set_wall_time(unix_seconds());
  event.set_step(step);
  return event;
}

}  // namespace

std::string tf_record(const std::string& data) {
  std::string out;
  out.reserve(data.size() + 16);
  const uint64_t length = data.size();
  for (int i = 0; i < 8; ++i) out.push_back(char((length >> (8 * i)) & 0xFFu));
  put_le32(out, masked_crc32c(out.data(), 8));
  out += data;
  put_le32(out, masked_crc32c(data.data(), data.size()));
  return out;
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
  create_directories(dir);
  const auto seconds = int64_t(unix_seconds());
  path_ = dir + "/events.out.tfevents." + std::to_string(seconds) + "." + host_name() + "." +
          std::to_string(getpid());
  file_ = std::make_unique<CheckedFile>(path_, CheckedFile::Mode::kExclusive);
  tensorboard::Event event = event_now(0);
  event.set_file_version("brain.Event:2");
  append(event.SerializeAsString());
}

TensorBoardWriter::~TensorBoardWriter() = default;

void TensorBoardWriter::restart_at(int64_t step) {
  tensorboard::Event event = event_now(step);
  event.mutable_session_log()->set_status(tensorboard::SessionLog::START);
  append(event.SerializeAsString());
}

void TensorBoardWriter::add_scalars(int64_t step, const Scalars& scalars) {
  tensorboard::Event event = event_now(step);
  tensorboard::Summary* summary = event.mutable_summary();
  for (const auto& [tag, value] : scalars) {
    tensorboard::Summary::Value* v = summary->add_value();
    v->set_tag(tag);
    v->set_simple_value(float(value));
  }
  append(event.SerializeAsString());
}

void TensorBoardWriter::close() {
  if (file_) file_->close();
}

void TensorBoardWriter::append(const std::string& event) {
  file_->append(tf_record(event));
}

}  // namespace cmpi::io
