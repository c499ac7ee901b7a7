#include "trainer/attempt_log.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>

#include "trainer/metrics.h"

namespace cmpi::trainer {
namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

AttemptLog::AttemptLog(const std::string& path, bool continues, int64_t from_step) {
  const double now = unix_now();
  first_start_ = now;
  if (path.empty()) return;
  std::string kept;
  if (continues) {
    // The earlier attempts' lines: how many, when the first began, and each
    // one's last recorded training seconds.
    std::ifstream in(path);
    std::map<int64_t, double> seconds_of;
    std::string line;
    bool first = true;
    while (std::getline(in, line)) {
      const auto attempt = number_field(line, "attempt");
      if (!attempt) continue;
      kept += line + "\n";
      attempt_ = std::max(attempt_, int64_t(*attempt) + 1);
      if (const auto start = number_field(line, "unix_time"); start && first) {
        first_start_ = *start;
        first = false;
      }
      if (const auto seconds = number_field(line, "seconds"))
        seconds_of[int64_t(*attempt)] = *seconds;
    }
    for (const auto& [attempt, seconds] : seconds_of) earlier_seconds_ += seconds;
  }
  file_.emplace(path, io::CheckedFile::Mode::kTruncate);
  char buf[160];
  std::snprintf(buf, sizeof buf, "{\"attempt\":%lld,\"from_step\":%lld,\"unix_time\":%.3f}\n",
                (long long)attempt_, (long long)from_step, now);
  file_->append(kept + buf);
}

void AttemptLog::progress(int64_t step, double seconds) {
  if (!file_) return;
  char buf[160];
  std::snprintf(buf, sizeof buf, "{\"attempt\":%lld,\"step\":%lld,\"seconds\":%.3f}\n",
                (long long)attempt_, (long long)step, seconds);
  file_->append(buf);
}

void AttemptLog::close() {
  if (file_) file_->close();
}

AttemptLog::Totals AttemptLog::totals(double seconds) const {
  Totals t;
  t.attempts = attempt_;
  t.seconds = earlier_seconds_ + seconds;
  // The first start is read back rounded to a millisecond.
  t.wall_seconds = std::max(0.0, unix_now() - first_start_);
  return t;
}

}  // namespace cmpi::trainer
