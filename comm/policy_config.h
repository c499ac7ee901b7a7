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
#include "compress/word_type.h"

namespace cmpi::comm {

struct RuleMatch {
  std::vector<GroupKind> groups;     // empty = any group
  std::vector<Op> ops;               // empty = any operation
  std::vector<Role> roles;           // empty = any role
  int64_t min_bytes = -1;            // -1 = the policy's min_bytes
  int64_t max_bytes = -1;            // -1 = no upper bound
  std::vector<Locality> localities;  // empty = any (intra- and inter-node)
  // The element type of the message: float32 buffers, or bf16/fp16 words
  // (the 16-bit calls, comm/communicator_words16.cpp). Empty = any.
  std::vector<compress::WordType> words;
};

// One way an adaptive rule may send what it matches.
struct AutoCandidate {
  std::optional<compress::CodecSpec> codec;  // nullopt = raw
  bool error_feedback = false;
};

struct PolicyRule {
  RuleMatch match;
  std::optional<compress::CodecSpec> codec;  // nullopt = send raw (plain MPI)
  bool error_feedback = false;
  int64_t chunk_bytes = -1;  // -1 = the policy's chunk_bytes
  std::string origin;        // "configs/x.yaml:12" or "preset zhybrid", for messages
  // Non-empty: an adaptive rule (preset auto). `codec` and `error_feedback`
  // are unused; each group picks one candidate per (op, role, locality) at
  // every step boundary (comm/adaptive_policy.h). The first candidate is
  // raw, the route before any measurement.
  std::vector<AutoCandidate> candidates;
};

// compression.auto: the adaptive policy's settings (preset auto;
// comm/adaptive_policy.h says how they are used).
struct AutoSettings {
  // The largest measured relative error ||D(C(x)) - x|| / ||x|| a lossy
  // candidate may have: without error feedback (what it loses is lost for
  // good: activations, and gradients through zfp rate 16 or bf16), and with
  // error feedback (what one step loses is sent with the next: gradients
  // through zfp rate 8 or 4).
  double max_rel_error = 0.01;
  double max_rel_error_feedback = 0.1;
  int64_t decide_every = 1;   // steps between two decisions (each one small allreduce per group)
  int64_t probe_every = 100;  // steps between measurements of the codecs on the run's data
  // A decision changes only when the new choice is predicted faster by more
  // than this fraction of the current one's time.
  double min_gain = 0.05;
  // Steps a candidate that its measured error alone does not vouch for
  // (comm/adaptive_model.h: trusted_on_error) carries on trial before the
  // loss trend judges it; the same number of steps under trusted routes
  // must precede it. 0: no trials (such candidates compete on cost alone).
  int64_t trend_window = 10;
};

struct PolicyConfig {
  std::string preset = "none";  // none | mzhybrid | zhybrid | auto
  // Which messages the preset's rules match: "inter" (default) compresses
  // only traffic that crosses a node boundary, where the wire is slow; "any"
  // compresses intra-node traffic too (the presets as the research defined
  // them, for clusters whose intra-node links are as slow as the network).
  std::string preset_locality = "inter";
  // How ranks are grouped into nodes: 0 = as MPI sees them
  // (MPI_COMM_TYPE_SHARED); N > 0 = world ranks [kN, (k+1)N) form node k
  // (to test locality rules on one machine, or where MPI's view is wrong).
  int64_t ranks_per_node = 0;
  // A raw allreduce of at least this many bytes over more than two ranks runs
  // the project's pipelined ring (comm/algorithms/ring_allreduce.cpp with
  // identity framing) instead of MPI_Allreduce: over TCP, OpenMPI's default
  // algorithm choice was measured 1.6x slower than a ring at 13 MiB on 4
  // nodes (docs/benchmarks.md). 0 = always MPI_Allreduce.
  int64_t plain_ring_min_bytes = 1 << 20;
  int64_t min_bytes = 64 << 10;     // smaller messages stay raw unless a rule says otherwise
  int64_t chunk_bytes = 1 << 20;    // pipelining granularity of compressed transfers
  double error_sample_rate = 0.01;  // fraction of lossy calls whose error is measured
  // "auto": dp allreduces of role embedding_gradient (an untied token
  // embedding's own bucket) first try the block-sparse allreduce with
  // `select: auto`, and take the route the other rules give them when the
  // measured density is at or above the calibrated crossover (see
  // comm/policy.h); "off": no such rule.
  std::string sparse_embedding = "auto";
  std::vector<PolicyRule> rules;
  AutoSettings auto_settings;  // read with preset auto only
};

}  // namespace cmpi::comm
