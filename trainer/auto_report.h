// The adaptive policy's decisions (preset auto, comm/adaptive_policy.h) as
// metrics.jsonl and the console report them. One step record carries
//
//   "auto":{"ms":0.21,"decisions":[{"group":"dp","op":"allreduce",
//     "role":"gradient","locality":"inter","codec":"zfp:mode=rate,rate=8 +
//     error feedback","changed":true,"reason":"faster","predicted_ms":41.2,
//     "predicted_from":"model","raw_ms":160.3,"fastest":"zfp:mode=rate,rate=8 +
//     error feedback","runner_up":"bf16",
//     "runner_up_ms":82.0,"link_mbit_s":197.5,"rel_error":0.052,
//     "steps_multiplier":1.003,"demoted":["sign:bucket=512"],
//     "previous_codec":"raw","previous_predicted_ms":158.0,"measured_ms":171.9},...]}
//
// "ms": this rank's time in the step-boundary agreement; one entry per
// (group, op, role, locality) of this rank's groups that carried traffic in
// the last period: the candidate chosen for this step and why, and what the
// previous period's calls of that slot took ("measured_ms", per step, the
// group's slowest rank) against what was predicted for them
// ("previous_predicted_ms"). Times -1: not predictable. "steps_multiplier":
// how many times raw's steps the chosen route is taken to need for the same
// loss; "verdict" (only at one): a trial's outcome (comm/adaptive_policy.h);
// "demoted" (only when some are): the slot's candidates a stalled loss trend
// ruled out for the rest of the run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/adaptive_policy.h"

namespace cmpi::trainer {

// {"ms":..,"decisions":[...]}
std::string auto_decisions_json(const std::vector<comm::AutoDecision>& decisions,
                                double agreement_ms);

// "auto: step 12 dp allreduce gradient (inter): raw -> bf16 (predicted 41.2 ms,
// raw 160.3 ms, runner-up ...; link 197.5 Mbit/s; error 0.0021; faster)",
// printed when worth_a_line.
std::string auto_change_line(int64_t step, const comm::AutoDecision& decision);

// Whether rank 0 prints the decision's line: its route changed, or a
// trial's verdict came in (a demotion may leave the route as it was).
bool worth_a_line(const comm::AutoDecision& decision);

}  // namespace cmpi::trainer
