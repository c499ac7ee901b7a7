// The end-of-run summary: loss against the data's floor, throughput, and per
// communicator group what was moved (bytes summed over all ranks, time as the
// slowest rank's). Collective over the world: every rank must call it.
// Rank 0 prints it and writes <run dir>/summary.json atomically (a failure
// throws io::FileError naming the file). It is valid JSON: a non-finite loss
// is null and named in "nonfinite", as in metrics.jsonl; it holds the steps
// skipped for non-finite values and, per group, the codec chunks sent raw
// because they held NaN or infinity; and per pipeline stage the most memory
// any of its ranks held: the optimizer's peak state (parameters, gradients,
// moments, staging) and the peak resident set (getrusage's ru_maxrss). It
// covers the whole run across its launches (steps, first loss, seconds,
// attempts and restarts: TrainResult::history) and, for a GPT, the model
// FLOPs per token, per-rank TFLOP/s, MFU and HFU against the peak and where
// that peak came from. The loss floor is written only where the data has one.
#pragma once

#include <string>

#include "config/config.h"
#include "trainer/trainer.h"

namespace cmpi::parallel {
class ProcessGroups;
}

namespace cmpi::trainer {

void report_summary(const config::Config& config, parallel::ProcessGroups& groups,
                    const TrainResult& result, const std::string& run_dir);

}  // namespace cmpi::trainer
