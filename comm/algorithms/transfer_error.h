// TransferError: a compressed transfer received something its receiver did
// not expect: another operation, element count, chunk size, codec or root
// than this rank's own view of the call, or a payload that does not decode.
// The message names the operation, group, both ranks and the field, e.g.
//   "compressed allreduce in group dp: rank 2 receiving from rank 1:
//    element count: sender has 1024, this rank expects 1000"
#pragma once

#include <stdexcept>
#include <string>

namespace cmpi::comm {

class TransferError : public std::runtime_error {
 public:
  TransferError(std::string field, const std::string& message)
      : std::runtime_error(message), field_(std::move(field)) {}
  // "element count", "codec", "codec parameters", "chunk_elems", "root",
  // "operation", "chunk index", "frame", "payload".
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

}  // namespace cmpi::comm
