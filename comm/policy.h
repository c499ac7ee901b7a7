// Policy: decides, for every message a Communicator is asked to move, whether
// it travels raw (the plain MPI operation) or through a codec, and with which
// chunk size and error feedback.
//
// The rules are the user's (PolicyConfig::rules, in order) followed by the
// preset's. A rule matches a message when its group, op, role, locality and
// word-type lists contain the message's (an empty list matches anything; role
// `gradient` also matches `embedding_gradient`, a kind of gradient) and the
// message's size lies in [min_bytes, max_bytes] (a rule without its own
// min_bytes uses the policy's min_bytes, so small, latency-bound messages
// stay raw). The first matching rule decides; a rule without a codec sends
// raw, which lets a user rule exempt traffic from a preset. No matching
// rule: raw.
//
// Sparse embeddings (PolicyConfig::sparse_embedding "auto", the default): one
// more rule, stored after the preset's (so the indices of the others, which
// name their codec state in checkpoints, do not depend on it) but tried
// before every other: dp allreduces of role embedding_gradient go through
// {name: block_sparse, select: auto}. When a call finds its density at or
// above the crossover, the Communicator takes the route of the next matching
// rule instead (PolicySlice::route_after), i.e. what the message would get
// without the sparse rule, and calibrates the crossover against that route.
//
// Policy answers questions (plan) and validates the whole configuration when
// built; PolicySlice is the per-group object a Communicator holds: it owns the
// codec instances of the rules that can apply to its group, built once, so
// that choosing a route on the hot path is a table lookup plus a short scan
// over precomputed masks, with no allocation and no string comparison. The
// word type is float32 unless the caller says otherwise: only the 16-bit
// calls (comm/communicator_words16.cpp) pass bf16 or fp16.
//
// Preset `auto` adds adaptive rules (PolicyRule::candidates): such a rule
// matches like any other, and its group then sends what it matches through
// the candidate chosen for the message's (op, role, locality). The slice
// holds every candidate's route, built once; a choice is an index that
// comm/adaptive_policy.h sets at step boundaries, from numbers every rank of
// the group agreed on, so all ranks of the group take the same route.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "comm/codec_state.h"
#include "comm/group_kind.h"
#include "comm/policy_config.h"
#include "comm/powersgd_settings.h"
#include "compress/codec.h"
#include "compress/codec_registry.h"
#include "compress/error_feedback.h"
#include "compress/word_type.h"

namespace cmpi::comm {

using compress::WordType;

// A policy that cannot be built; the message names the rule's origin.
class PolicyError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The rules a preset adds after the user's ("none", "mzhybrid", "zhybrid",
// "auto"),
// matching only inter-node messages when `locality` is "inter", every
// message when it is "any". Throws PolicyError naming the preset (or the
// locality) and the known ones for anything else.
std::vector<PolicyRule> preset_rules(const std::string& preset,
                                     const std::string& locality = "any");

// How one message is sent. Pointers refer into the Policy that made it.
// A powersgd rule plans raw (codec nullptr) with `low_rank` set: the
// Communicator sends raw, the data-parallel optimizer runs PowerSGD.
struct Plan {
  const compress::CodecSpec* codec = nullptr;     // nullptr: raw
  const compress::CodecSpec* low_rank = nullptr;  // a powersgd rule decided
  bool error_feedback = false;
  size_t chunk_bytes = 0;   // pipelining granularity (meaningful when compressed)
  int rule = -1;            // index in Policy::rules(); -1: no rule matched
  std::string_view origin;  // the deciding rule's origin, or "default (no rule matched)"
  bool raw() const { return codec == nullptr; }
};

class Policy {
 public:
  // Validates every rule (codec known and constructible with its parameters,
  // byte bounds, chunk size, error feedback only on lossy codecs) and throws
  // PolicyError naming the rule's origin otherwise.
  explicit Policy(PolicyConfig config = {}, compress::CodecRegistry registry =
                                                compress::CodecRegistry::with_builtin_codecs());

  Plan plan(GroupKind group, Op op, Role role, size_t bytes, Locality locality = Locality::kInter,
            WordType word = WordType::kFloat32) const;
  // The plan of the next matching rule after `decided`'s (what a
  // block-sparse `select: auto` call falls back to when too dense).
  Plan plan_after(const Plan& decided, GroupKind group, Op op, Role role, size_t bytes,
                  Locality locality = Locality::kInter, WordType word = WordType::kFloat32) const;

  const PolicyConfig& config() const { return config_; }
  // User rules, then the preset's, then the sparse-embedding rule if any.
  const std::vector<PolicyRule>& rules() const { return rules_; }
  // Indices into rules() in the order they are tried (the sparse-embedding
  // rule first, then the others in order).
  const std::vector<size_t>& match_order() const { return match_order_; }
  const compress::CodecRegistry& registry() const { return registry_; }

 private:
  friend class PolicySlice;
  // The first matching rule from match_order()[position] on.
  Plan plan_from(size_t position, GroupKind group, Op op, Role role, size_t bytes,
                 Locality locality, WordType word) const;
  struct Bounds {
    uint32_t groups = 0, ops = 0, roles = 0, localities = 0, words = 0;  // bit masks
    uint64_t min_bytes = 0, max_bytes = 0;                               // inclusive
    size_t chunk_bytes = 0;
  };

  PolicyConfig config_;
  compress::CodecRegistry registry_;
  std::vector<PolicyRule> rules_;
  std::vector<Bounds> bounds_;  // parallel to rules_
  std::vector<size_t> match_order_;
};

// The rule PolicyConfig::sparse_embedding "auto" adds (origin
// "compression.sparse_embedding: auto").
PolicyRule sparse_embedding_rule();

// One group's share of a Policy, with the codec instances its rules need.
// Used by one Communicator (codec encoders keep state; not shared across
// threads).
class PolicySlice {
 public:
  // One rule bound to this group's codec instances.
  struct Route {
    uint32_t ops = 0, roles = 0, localities = 0, words = 0;
    uint64_t min_bytes = 0, max_bytes = 0;
    compress::Codec* codec = nullptr;             // nullptr: raw
    compress::ErrorFeedback* feedback = nullptr;  // non-null: own data goes through it
    // Set by a powersgd rule (codec stays nullptr: the message itself is
    // sent raw); the data-parallel optimizer reads it to go low-rank.
    std::optional<PowerSgdSettings> powersgd;
    size_t chunk_elems = 0;
    int rule = -1;  // index in the Policy's rules
    std::string origin;
    // An adaptive rule: index in auto_rules(). The rule's own route (in
    // routes()) is never returned by route(); its candidates' are, and they
    // carry their index in `candidate`.
    int auto_rule = -1;
    int candidate = -1;
  };

  using ChoiceTable =
      std::array<std::array<std::array<uint8_t, kRoleCount>, kOpCount>, kLocalityCount>;
  // An adaptive rule of this group: its candidates' routes (candidates[0]
  // sends raw) and, per (locality, op, role), the candidate chosen now.
  // Candidates with error feedback share one residual store, so switching
  // between them carries what was left unsent over to the next codec; a
  // switch to a candidate without feedback leaves the residuals parked
  // until a candidate with feedback is chosen again.
  struct AutoRule {
    int rule = -1;
    std::string origin;
    uint32_t ops = 0, roles = 0, localities = 0;  // what the rule can match
    std::vector<Route> candidates;
    std::shared_ptr<compress::ErrorFeedback::Residuals> residuals;
    ChoiceTable choice{};
  };

  PolicySlice(const Policy& policy, GroupKind group);
  PolicySlice(const PolicySlice&) = delete;
  PolicySlice& operator=(const PolicySlice&) = delete;

  // The route for a message of this group; nullptr when no rule matches
  // (raw). A route whose codec is nullptr also means raw.
  const Route* route(Op op, Role role, size_t bytes, Locality locality = Locality::kInter,
                     WordType word = WordType::kFloat32) const {
    int fixed = fixed_[int(word)][int(locality)][int(op)][int(role)];
    const Route* found = fixed >= 0          ? &routes_[size_t(fixed)]
                         : fixed == kNoRoute ? nullptr
                                             : scan(0, op, role, bytes, locality, word);
    return chosen_candidate(found, op, role, locality);
  }
  // The route the message would take if `after` (one of routes(), not an
  // adaptive candidate) did not exist: the next matching one in matching
  // order, nullptr for raw.
  const Route* route_after(const Route& after, Op op, Role role, size_t bytes,
                           Locality locality = Locality::kInter,
                           WordType word = WordType::kFloat32) const {
    return chosen_candidate(
        scan(size_t(&after - routes_.data()) + 1, op, role, bytes, locality, word), op, role,
        locality);
  }

  // True when the route for (op, role) does not depend on the message size,
  // so ranks whose sizes differ still agree on it (alltoall).
  bool size_independent(Op op, Role role, Locality locality = Locality::kInter,
                        WordType word = WordType::kFloat32) const {
    return fixed_[int(word)][int(locality)][int(op)][int(role)] != kBySize;
  }

  GroupKind group() const { return group_; }
  const std::vector<Route>& routes() const { return routes_; }  // in matching order
  const std::vector<AutoRule>& auto_rules() const { return auto_rules_; }
  // Sets the candidate adaptive rule `auto_rule` uses for (locality, op,
  // role). Only between operations, and the same on every rank of the group.
  void choose(size_t auto_rule, Locality locality, Op op, Role role, size_t candidate);

  // The error-feedback residuals and codec random generators of this group
  // (comm/codec_state.h), for checkpoints.
  CodecState codec_state() const;
  // Puts a saved state back: every residual and generator whose rule key
  // this slice has replaces the current one (residuals of a rule are
  // replaced as a whole). Returns the keys it had no codec for, which the
  // caller reports as dropped. Throws std::invalid_argument for a generator
  // state of the wrong size, naming the key.
  std::vector<std::string> restore_codec_state(const CodecState& state);
  // Sampled error is measured on every sample_every-th lossy call of an op
  // (0: never).
  uint64_t sample_every() const { return sample_every_; }
  // Raw allreduces of at least this size take the ring (0: never); see
  // PolicyConfig::plain_ring_min_bytes.
  uint64_t plain_ring_min_bytes() const { return plain_ring_min_bytes_; }
  size_t plain_ring_chunk_elems() const { return plain_ring_chunk_elems_; }
  // compression.auto, for the group's AdaptivePolicy.
  const AutoSettings& auto_settings() const { return auto_settings_; }

 private:
  static constexpr int kNoRoute = -1;
  static constexpr int kBySize = -2;
  const Route* scan(size_t first, Op op, Role role, size_t bytes, Locality locality,
                    WordType word) const;
  // An adaptive rule's route stands for the candidate chosen now.
  const Route* chosen_candidate(const Route* found, Op op, Role role, Locality locality) const {
    if (found == nullptr || found->auto_rule < 0) return found;
    const AutoRule& rule = auto_rules_[size_t(found->auto_rule)];
    return &rule.candidates[rule.choice[int(locality)][int(op)][int(role)]];
  }
  AutoRule make_auto_rule(const compress::CodecRegistry& registry, const PolicyRule& rule,
                          const Route& base);

  GroupKind group_;
  uint64_t sample_every_ = 0;
  uint64_t plain_ring_min_bytes_ = 0;
  size_t plain_ring_chunk_elems_ = 1;
  AutoSettings auto_settings_;
  std::vector<Route> routes_;
  std::vector<AutoRule> auto_rules_;
  std::vector<std::unique_ptr<compress::Codec>> codecs_;
  std::vector<std::unique_ptr<compress::ErrorFeedback>> feedbacks_;
  // Per (word type, locality, op, role): a route index when the size cannot
  // change the answer, kNoRoute when nothing can match, kBySize when route()
  // must scan.
  std::array<std::array<std::array<std::array<int, kRoleCount>, kOpCount>, kLocalityCount>,
             compress::kWordTypeCount>
      fixed_{};
};

}  // namespace cmpi::comm
