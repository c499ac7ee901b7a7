// AttemptLog: <run dir>/attempts.jsonl, the launches of one run, so that a
// run restarted by scripts/cmpi-run (or by hand with --resume) reports its
// whole history in summary.json: how many attempts, and how long they
// trained. Rank 0 writes it. Each attempt appends
//   {"attempt":2,"from_step":100,"unix_time":1764370000.123} when it starts,
//   {"attempt":2,"step":150,"seconds":41.2}                  at every
// checkpoint and at its end (its training seconds so far), one checked
// write each. A launch without --resume starts the file anew. An attempt
// that was killed keeps the seconds of its last checkpoint: the steps after
// it are trained again, and counted, by the next attempt.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "io/checked_file.h"

namespace cmpi::trainer {

class AttemptLog {
 public:
  // path empty: records nothing; totals() is this attempt's alone.
  // continues: keep the earlier attempts' lines (a --resume launch).
  AttemptLog(const std::string& path, bool continues, int64_t from_step);

  // This attempt has trained `seconds` and reached `step`.
  void progress(int64_t step, double seconds);
  void close();

  struct Totals {
    int64_t attempts = 1;     // this one included
    double seconds = 0;       // training seconds of all attempts
    double wall_seconds = 0;  // since the first attempt started
  };
  // With this attempt's training seconds so far.
  Totals totals(double seconds) const;

 private:
  std::optional<io::CheckedFile> file_;
  int64_t attempt_ = 1;
  double earlier_seconds_ = 0;  // the earlier attempts' last recorded seconds
  double first_start_ = 0;      // unix time the first attempt started
};

}  // namespace cmpi::trainer
