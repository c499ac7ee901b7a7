#include "comm/powersgd_settings.h"

namespace cmpi::comm {
namespace {

template <typename T>
bool is_exactly(const std::vector<T>& values, T value) {
  return values.size() == 1 && values[0] == value;
}

}  // namespace

PowerSgdSettings parse_powersgd_settings(const compress::CodecSpec& spec) {
  spec.require_only(
      {"rank", "start_step", "warm_start", "seed", "error_feedback", "raw_embeddings"});
  PowerSgdSettings s;
  s.rank = spec.get_int("rank", s.rank);
  if (s.rank < 1 || s.rank > 1024)
    throw compress::CodecError("codec 'powersgd': parameter 'rank' must lie in [1, 1024], got " +
                               std::to_string(s.rank));
  s.start_step = spec.get_int("start_step", s.start_step);
  if (s.start_step < 0)
    throw compress::CodecError("codec 'powersgd': parameter 'start_step' must be >= 0, got " +
                               std::to_string(s.start_step));
  s.warm_start = spec.get_bool("warm_start", s.warm_start);
  const int64_t seed = spec.get_int("seed", int64_t(s.seed));
  if (seed < 0)
    throw compress::CodecError("codec 'powersgd': parameter 'seed' must be >= 0, got " +
                               std::to_string(seed));
  s.seed = uint64_t(seed);
  s.error_feedback = spec.get_bool("error_feedback", s.error_feedback);
  s.raw_embeddings = spec.get_bool("raw_embeddings", s.raw_embeddings);
  return s;
}

std::string powersgd_rule_problem(const PolicyRule& rule) {
  const RuleMatch& m = rule.match;
  if (!is_exactly(m.groups, GroupKind::kDp))
    return "a powersgd rule must match `group: dp` only (it replaces the data-parallel gradient "
           "allreduce, the one place that knows the gradient shapes)";
  if (!is_exactly(m.ops, Op::kAllreduce))
    return "a powersgd rule must match `op: allreduce` only (under parallel.zero_stage 2/3 the "
           "gradients are reduce-scattered, which PowerSGD cannot do)";
  if (!is_exactly(m.roles, Role::kGradient))
    return "a powersgd rule must match `role: gradient` only";
  if (rule.error_feedback)
    return "powersgd keeps its own error feedback; remove `error_feedback: true`";
  return "";
}

}  // namespace cmpi::comm
