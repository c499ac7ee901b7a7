// CheckpointError: a checkpoint could not be saved or loaded. Thrown by the
// collective entry points on EVERY rank with the same message (the failing
// rank's), so the job can end with one message and no rank left waiting.
#pragma once

#include <stdexcept>
#include <string>

namespace cmpi::checkpoint {

class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace cmpi::checkpoint
