// StageTrafficLog (tests and diagnostics): what one rank of every pipeline
// stage sends, step by step, so that the planner's projection of each stage
// can be checked against the trainer (metrics.jsonl holds world rank 0's
// counts only, which is stage 0's). With the environment variable
// CMPI_STAGE_TRAFFIC=DIR, the first rank of each stage (tp, sp and dp
// coordinates 0) appends after every step one line to DIR/stage<S>.jsonl:
//   {"step":N,"world_rank":R,"groups":{...}}
// "groups" being the cumulative per-group stats metrics.jsonl writes. Unset:
// nothing is written and nothing is read.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "io/checked_file.h"

namespace cmpi::parallel {
class ProcessGroups;
}

namespace cmpi::trainer {

class StageTrafficLog {
 public:
  static constexpr const char* kVariable = "CMPI_STAGE_TRAFFIC";
  // The directory named by kVariable ("" when unset).
  static std::string directory_from_environment();

  // Writes only on the first rank of a stage and when `dir` is not empty;
  // creates `dir`. Throws io::FileError naming the file.
  StageTrafficLog(const std::string& dir, const parallel::ProcessGroups& groups);

  bool active() const { return file_ != nullptr; }
  void record(int64_t step, const std::string& groups_json);

 private:
  int world_rank_ = 0;
  std::unique_ptr<io::CheckedFile> file_;
};

}  // namespace cmpi::trainer
