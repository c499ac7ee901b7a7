#include "comm/group_kind.h"

namespace cmpi::comm {

const char* to_string(GroupKind kind) {
  switch (kind) {
    case GroupKind::kWorld:
      return "world";
    case GroupKind::kDp:
      return "dp";
    case GroupKind::kTp:
      return "tp";
    case GroupKind::kPp:
      return "pp";
    case GroupKind::kSp:
      return "sp";
    case GroupKind::kZero:
      return "zero";
    case GroupKind::kCp:
      return "cp";
  }
  return "?";
}

const char* to_string(Role role) {
  switch (role) {
    case Role::kGradient:
      return "gradient";
    case Role::kActivation:
      return "activation";
    case Role::kActivationGrad:
      return "activation_grad";
    case Role::kWeight:
      return "weight";
    case Role::kHalo:
      return "halo";
    case Role::kOther:
      return "other";
    case Role::kEmbeddingGradient:
      return "embedding_gradient";
    case Role::kPseudoGradient:
      return "pseudo_gradient";
  }
  return "?";
}

const char* to_string(Op op) {
  switch (op) {
    case Op::kAllreduce:
      return "allreduce";
    case Op::kReduceScatter:
      return "reduce_scatter";
    case Op::kAllgather:
      return "allgather";
    case Op::kBroadcast:
      return "broadcast";
    case Op::kAlltoall:
      return "alltoall";
    case Op::kSendRecv:
      return "p2p";
    case Op::kHalo:
      return "halo";
  }
  return "?";
}

const char* call_name(Op op) {
  if (op == Op::kSendRecv) return "send/recv";
  if (op == Op::kHalo) return "halo_exchange";
  return to_string(op);
}

const char* to_string(Locality locality) {
  return locality == Locality::kIntra ? "intra" : "inter";
}

std::optional<GroupKind> parse_group_kind(const std::string& word) {
  for (int i = 0; i < kGroupKindCount; ++i)
    if (word == to_string(GroupKind(i))) return GroupKind(i);
  return std::nullopt;
}

std::optional<Role> parse_role(const std::string& word) {
  for (int i = 0; i < kRoleCount; ++i)
    if (word == to_string(Role(i))) return Role(i);
  return std::nullopt;
}

std::optional<Op> parse_op(const std::string& word) {
  if (word == "send" || word == "recv" || word == "sendrecv") return Op::kSendRecv;
  for (int i = 0; i < kOpCount; ++i)
    if (word == to_string(Op(i))) return Op(i);
  return std::nullopt;
}

std::optional<Locality> parse_locality(const std::string& word) {
  for (int i = 0; i < kLocalityCount; ++i)
    if (word == to_string(Locality(i))) return Locality(i);
  return std::nullopt;
}

}  // namespace cmpi::comm
