// PolicyConfig: the `compression:` section of a run config in typed form.
// Rules are tried in order before the preset's rules; the first rule whose
// match fits a message decides how it is sent. The trainer's config loader
// fills this from YAML; comm/policy.h turns it into per-group decisions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "comm/group_kind.h"
#include "compress/codec_spec.h"

namespace cmpi::comm {

struct RuleMatch {
  std::vector<GroupKind> groups;  // empty = any group
  std::vector<Op> ops;            // empty = any operation
  std::vector<Role> roles;        // empty = any role
  int64_t min_bytes = -1;         // -1 = the policy's min_bytes
  int64_t max_bytes = -1;         // -1 = no upper bound
};

struct PolicyRule {
  RuleMatch match;
  std::optional<compress::CodecSpec> codec;  // nullopt = send raw (plain MPI)
  bool error_feedback = false;
  int64_t chunk_bytes = -1;  // -1 = the policy's chunk_bytes
  std::string origin;        // "configs/x.yaml:12" or "preset zhybrid", for messages
};

struct PolicyConfig {
  std::string preset = "none";      // none | mzhybrid | zhybrid
  int64_t min_bytes = 64 << 10;     // smaller messages stay raw unless a rule says otherwise
  int64_t chunk_bytes = 1 << 20;    // pipelining granularity of compressed transfers
  double error_sample_rate = 0.01;  // fraction of lossy calls whose error is measured
  std::vector<PolicyRule> rules;
};

}  // namespace cmpi::comm
