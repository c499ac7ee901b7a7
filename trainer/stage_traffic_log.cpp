#include "trainer/stage_traffic_log.h"

#include <cstdlib>

#include "io/directories.h"
#include "parallel/mesh/process_groups.h"

namespace cmpi::trainer {

std::string StageTrafficLog::directory_from_environment() {
  const char* dir = std::getenv(kVariable);
  return dir ? dir : "";
}

StageTrafficLog::StageTrafficLog(const std::string& dir, const parallel::ProcessGroups& groups)
    : world_rank_(groups.world_rank()) {
  const parallel::GridCoord& at = groups.coord();
  if (dir.empty() || at.tp != 0 || at.sp != 0 || at.dp != 0 || at.cp != 0) return;
  io::create_directories(dir);
  file_ = std::make_unique<io::CheckedFile>(dir + "/stage" + std::to_string(at.pp) + ".jsonl",
                                            io::CheckedFile::Mode::kTruncate);
}

void StageTrafficLog::record(int64_t step, const std::string& groups_json) {
  if (!file_) return;
  file_->append("{\"step\":" + std::to_string(step) + ",\"world_rank\":" +
                std::to_string(world_rank_) + ",\"groups\":" + groups_json + "}\n");
}

}  // namespace cmpi::trainer
