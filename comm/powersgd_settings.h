// PowerSgdSettings: the parameters of a `codec: {name: powersgd, ...}` policy
// rule. PowerSGD (Vogels et al., NeurIPS 2019) is not a Codec: it compresses a
// gradient *matrix* to two thin factors and needs the tensor shapes, so the
// data-parallel optimizer (parallel/zero/powersgd_reducer.h) runs it, not the
// Communicator. The policy only validates the rule and tells the optimizer
// that the dp gradient allreduce is to be low-rank; the factors' own
// allreduces then travel raw through the same rule (which sends raw).
//
// A powersgd rule must match exactly group dp, op allreduce, role gradient
// and cannot take error_feedback (PowerSGD keeps its own residuals).
#pragma once

#include <cstdint>
#include <string>

#include "comm/policy_config.h"
#include "compress/codec_spec.h"

namespace cmpi::comm {

inline constexpr const char* kPowerSgdName = "powersgd";

struct PowerSgdSettings {
  int64_t rank = 4;        // r: columns of P and Q
  int64_t start_step = 0;  // steps (from 0) reduced raw before PowerSGD starts
  bool warm_start = true;  // Q of the last step seeds the next; false: fresh random Q
  uint64_t seed = 1;       // Q's initial values, identical on every dp rank
  // Carry what the approximation misses into the next step (the residual of
  // powersgd_reducer.h); false: drop it.
  bool error_feedback = true;
  // Sum the embedding tables' gradients (token and position embeddings, an
  // untied output head) raw instead of low-rank: the token table's gradient
  // (tied to the output head) is far from low rank, and approximating it is
  // what keeps rank-4 PowerSGD with AdamW from reaching the uncompressed loss
  // (docs/policy.md, "Low rank: PowerSGD", measured there).
  bool raw_embeddings = true;
};

inline bool is_powersgd(const compress::CodecSpec& spec) {
  return spec.name() == kPowerSgdName;
}

// Reads {name: powersgd, rank: 4, start_step: 0, warm_start: true, seed: 1,
// error_feedback: true, raw_embeddings: true};
// throws compress::CodecError naming the parameter for an unknown key or a
// bad value (rank in [1, 1024], start_step >= 0).
PowerSgdSettings parse_powersgd_settings(const compress::CodecSpec& spec);

// Why `rule` cannot carry a powersgd codec ("" when it can): its match must be
// exactly group dp, op allreduce, role gradient; no error_feedback.
std::string powersgd_rule_problem(const PolicyRule& rule);

}  // namespace cmpi::comm
