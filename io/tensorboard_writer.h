// TensorBoardWriter: scalars in a TensorBoard event file, so that a user's
// `tensorboard --logdir <run dir>/tensorboard` plots a run live.
//
// The file (events.out.tfevents.<unix seconds>.<host>.<pid>, created new in
// `dir`) is a sequence of TFRecords: the length of the record (little-endian
// u64), its masked CRC-32C, the record, its masked CRC-32C (io/crc32c.h);
// each record a serialized Event protobuf (io/tensorboard_event.proto:
// Debian's protobuf library writes them, from the field numbers TensorFlow
// publishes). The first is the file_version event TensorBoard expects; then
// one Event per logged step holding every scalar as a Summary value.
//
// Each write is one io::CheckedFile append, handed to the kernel before it
// returns: a live TensorBoard sees every step as soon as it is logged, and a
// write error throws io::FileError naming the file. Needs no LibTorch and no
// MPI; the trainer gives it to rank 0 only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cmpi::io {

class CheckedFile;

// One record's framing: length, masked CRC of the length, data, masked CRC
// of the data.
std::string tf_record(const std::string& data);

class TensorBoardWriter {
 public:
  using Scalars = std::vector<std::pair<std::string, double>>;  // tag, value

  // Creates `dir` if needed and the event file in it, and writes the
  // file_version record. Throws io::FileError naming what could not be made.
  explicit TensorBoardWriter(const std::string& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // A resumed run restarts at `step`: TensorBoard then drops the scalars an
  // earlier attempt logged at that step and after (its files stay beside
  // this one in the same folder).
  void restart_at(int64_t step);
  // The step's scalars, one record (values are stored as 32-bit floats).
  void add_scalars(int64_t step, const Scalars& scalars);
  // Forces the file to storage and closes it; throws io::FileError.
  void close();

  const std::string& path() const { return path_; }

 private:
  void append(const std::string& event);

  std::string path_;
  std::unique_ptr<CheckedFile> file_;
};

}  // namespace cmpi::io
