// Checks a codec benchmark run against the targets the project set for its
// codecs (issue "compress/": mpc speed and ratio, zfp thread scaling, cast
// speed, a 4x lossy setting under 5 % error at >= 1 GB/s/core) and prints one
// line per target: met, missed (with the figures), or not measured in this
// run (codec, dataset or threads missing).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "bench/result_table.h"

namespace cmpi::bench {

struct TargetVerdict {
  std::string target;                // what was asked, in words
  std::string status;                // "met", "missed", "not measured"
  std::vector<std::string> details;  // the figures behind the status, one line each
};

std::vector<TargetVerdict> check_targets(const std::vector<ResultRow>& rows);

void print_target_report(const std::vector<TargetVerdict>& verdicts, std::FILE* to);

}  // namespace cmpi::bench
