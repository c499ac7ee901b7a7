// CodecState: what a group's codecs carry from one message to the next, in a
// form a checkpoint can store without knowing about codecs: the
// error-feedback residuals (float arrays, one per buffer key of each rule
// with error_feedback) and the random generators of stochastic codecs
// (randomk, qsgd, natural). Keys name the rule by its index and codec spec,
// so a state saved under another policy does not land in the wrong codec:
//
//   residuals:     "rule<i>:<codec spec>/<buffer key, 16 hex digits>"
//   random_states: "rule<i>:<codec spec>"
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cmpi::comm {

struct CodecState {
  std::map<std::string, std::vector<float>> residuals;
  std::map<std::string, std::vector<uint64_t>> random_states;
  bool empty() const { return residuals.empty() && random_states.empty(); }
};

}  // namespace cmpi::comm
