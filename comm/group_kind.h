// The vocabulary the policy engine matches on: which communicator group a
// message travels in, what kind of tensor it is, and which operation moves it.
// Op is also the operation a compressed transfer's chunk frame names
// (comm/algorithms/chunk_frame.h).
#pragma once

#include <optional>
#include <string>

namespace cmpi::comm {

// kCp (context parallelism) is last so that the other kinds keep their
// numbers (policy masks, checkpointed codec state are keyed by them).
enum class GroupKind { kWorld, kDp, kTp, kPp, kSp, kZero, kCp };
// kEmbeddingGradient: the gradient of an embedding table whose rows only
// the tokens of the step touch (sparse), in its own dp bucket. It is a kind
// of gradient: a rule that matches role `gradient` matches it too, so it
// travels as every other gradient unless a rule names it (e.g. the
// block-sparse rule of PolicyConfig::sparse_embedding).
// kPseudoGradient: DiLoCo's pseudo-gradient (parallel/diloco/), the weights'
// change since the last outer step, averaged over dp every sync_every steps.
// Also a kind of gradient: rules naming `gradient` (the presets' dp rules)
// take it, and a rule naming `pseudo_gradient` matches nothing else.
enum class Role {
  kGradient,
  kActivation,
  kActivationGrad,
  kWeight,
  kHalo,
  kOther,
  kEmbeddingGradient,
  kPseudoGradient
};
enum class Op { kAllreduce, kReduceScatter, kAllgather, kBroadcast, kAlltoall, kSendRecv, kHalo };
// Whether a message stays inside one node (ranks of one MPI_COMM_TYPE_SHARED
// communicator) or crosses a node boundary. A collective is inter-node when
// its group spans more than one node; a point-to-point message when its two
// ranks sit on different nodes.
enum class Locality { kIntra, kInter };

constexpr int kGroupKindCount = 7;
// Every group kind, in the order metrics and summaries list them.
inline constexpr GroupKind kAllGroupKinds[] = {GroupKind::kDp,   GroupKind::kTp, GroupKind::kPp,
                                               GroupKind::kCp,   GroupKind::kSp, GroupKind::kZero,
                                               GroupKind::kWorld};
constexpr int kRoleCount = 8;
constexpr int kOpCount = 7;
constexpr int kLocalityCount = 2;

const char* to_string(GroupKind kind);
const char* to_string(Role role);
const char* to_string(Op op);  // the YAML and metrics spelling: "p2p", "halo", ...
// How error messages name a call: as to_string, but "send/recv" and
// "halo_exchange" for the point-to-point operations.
const char* call_name(Op op);
const char* to_string(Locality locality);  // "intra", "inter"

// Parse the YAML spellings ("dp", "activation_grad", "reduce_scatter", "p2p");
// std::nullopt for an unknown word, so the caller can name the config key.
std::optional<GroupKind> parse_group_kind(const std::string& word);
std::optional<Role> parse_role(const std::string& word);
std::optional<Op> parse_op(const std::string& word);
std::optional<Locality> parse_locality(const std::string& word);

}  // namespace cmpi::comm
