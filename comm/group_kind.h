// The vocabulary the policy engine matches on: which communicator group a
// message travels in, what kind of tensor it is, and which operation moves it.
#pragma once

#include <optional>
#include <string>

namespace cmpi::comm {

enum class GroupKind { kWorld, kDp, kTp, kPp, kSp, kZero };
enum class Role { kGradient, kActivation, kActivationGrad, kWeight, kHalo, kOther };
enum class Op { kAllreduce, kReduceScatter, kAllgather, kBroadcast, kAlltoall, kSendRecv, kHalo };

constexpr int kGroupKindCount = 6;
constexpr int kRoleCount = 6;
constexpr int kOpCount = 7;

const char* to_string(GroupKind kind);
const char* to_string(Role role);
const char* to_string(Op op);

// Parse the YAML spellings ("dp", "activation_grad", "reduce_scatter", "p2p");
// std::nullopt for an unknown word, so the caller can name the config key.
std::optional<GroupKind> parse_group_kind(const std::string& word);
std::optional<Role> parse_role(const std::string& word);
std::optional<Op> parse_op(const std::string& word);

}  // namespace cmpi::comm
