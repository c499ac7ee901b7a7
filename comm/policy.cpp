#include "comm/policy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "compress/fp8_format.h"

namespace cmpi::comm {
namespace {

using compress::Fp8Format;

constexpr uint64_t kNoMax = std::numeric_limits<uint64_t>::max();

template <typename E>
uint32_t mask_of(const std::vector<E>& values, int count) {
  if (values.empty()) return (1u << count) - 1;
  uint32_t mask = 0;
  for (E v : values) mask |= 1u << int(v);
  return mask;
}

// An embedding's gradient and DiLoCo's pseudo-gradient are gradients: rules
// naming `gradient` take them too.
uint32_t role_mask_of(const std::vector<Role>& roles) {
  uint32_t mask = mask_of(roles, kRoleCount);
  if (mask & (1u << int(Role::kGradient)))
    mask |= (1u << int(Role::kEmbeddingGradient)) | (1u << int(Role::kPseudoGradient));
  return mask;
}

bool has(uint32_t mask, int bit) {
  return (mask >> bit) & 1u;
}

// Chunks hold whole floats.
bool whole_floats(int64_t bytes) {
  return bytes > 0 && bytes % int64_t(sizeof(float)) == 0;
}

PolicyRule preset_rule(std::vector<GroupKind> groups, std::vector<Role> roles,
                       compress::CodecSpec codec, bool error_feedback, std::string origin,
                       std::vector<WordType> words = {}) {
  PolicyRule rule;
  rule.match.groups = std::move(groups);
  rule.match.roles = std::move(roles);
  rule.match.words = std::move(words);
  rule.codec = std::move(codec);
  rule.error_feedback = error_feedback;
  rule.origin = std::move(origin);
  return rule;
}

compress::CodecSpec zfp_rate(int rate) {
  return compress::CodecSpec("zfp", {{"mode", "rate"}, {"rate", std::to_string(rate)}});
}

compress::CodecSpec fp8(compress::Fp8Format format) {
  return compress::CodecSpec("fp8", {{"format", compress::fp8_format_name(format)}});
}

std::string rule_name(const PolicyRule& rule, size_t index) {
  return rule.origin.empty() ? "compression rule #" + std::to_string(index + 1) : rule.origin;
}

PolicyRule auto_rule(std::vector<GroupKind> groups, std::vector<Role> roles,
                     std::vector<AutoCandidate> candidates, std::string origin) {
  PolicyRule rule;
  rule.match.groups = std::move(groups);
  rule.match.roles = std::move(roles);
  rule.candidates = std::move(candidates);
  rule.origin = std::move(origin);
  return rule;
}

AutoCandidate candidate(std::optional<compress::CodecSpec> codec, bool error_feedback = false) {
  return AutoCandidate{std::move(codec), error_feedback};
}

// What preset auto may choose from. Each list holds every setting the fixed
// presets use for that traffic (so auto can always do what the best of them
// does) plus settings worth having on a slow link: bf16 (2x at ~10 GB/s per
// core, an error near a bf16 mixed-precision step's) and, for gradients
// only, zfp rate 4 with error feedback (8x). Raw comes first: the route
// before anything is measured, and the winner of a tie.
std::vector<AutoCandidate> auto_gradient_candidates() {
  return {candidate(std::nullopt),
          candidate(zfp_rate(16)),
          candidate(zfp_rate(8), true),
          candidate(compress::CodecSpec("mpc")),
          candidate(compress::CodecSpec("bf16")),
          candidate(zfp_rate(4), true)};
}
// Activations flow on through the layers, so no error feedback and no
// coarse setting: the errors of these stay below a bf16 cast's.
std::vector<AutoCandidate> auto_model_candidates() {
  return {candidate(std::nullopt), candidate(compress::CodecSpec("mpc")), candidate(zfp_rate(16)),
          candidate(compress::CodecSpec("bf16"))};
}

// The preset's rules as the research defined them, for every message.
std::vector<PolicyRule> preset_rules_everywhere(const std::string& preset) {
  // DP gradients travel in the dp group (allreduce) and, under ZeRO, in the
  // zero group (reduce-scatter); both are "DP gradients" to the presets.
  // ZeRO's weight all-gathers and sp/world traffic stay raw: weights are
  // not smooth enough for mpc to pay and must not drift under a lossy codec.
  const std::vector<GroupKind> dp_groups = {GroupKind::kDp, GroupKind::kZero};
  // Context parallelism's keys and values (and their gradients) are
  // activations like tp's and pp's, and get the same rules.
  const std::vector<GroupKind> model_groups = {GroupKind::kTp, GroupKind::kPp, GroupKind::kCp};
  if (preset == "none") return {};
  if (preset == "mzhybrid") {
    // Lossless where activations flow (their errors would compound through
    // the layers), lossy only on gradients, which SGD averages anyway. Rate
    // 16 (2x) keeps ZFP's error near that of a bf16 cast, small enough that
    // no error feedback is needed; zhybrid is the aggressive alternative.
    return {preset_rule(dp_groups, {Role::kGradient}, zfp_rate(16), false,
                        "preset mzhybrid: dp gradients"),
            preset_rule(model_groups, {}, compress::CodecSpec("mpc"), false,
                        "preset mzhybrid: tp/pp traffic")};
  }
  if (preset == "zhybrid") {
    // Rate 8 (4x) on gradients loses too much to leave uncorrected; error
    // feedback sends what was lost with the next step. tp/pp traffic gets
    // half the bits of its own width: float32 through zfp rate 16 (2x, an
    // error comparable to the bf16 precision mixed-precision training
    // already tolerates); 16-bit words, which zfp rate 16 would not shrink,
    // through fp8 with a power-of-two scale per 1024 values (2x). As FP8
    // training does: activations in e4m3 (3 mantissa bits, the precision
    // the forward values need), their gradients in e5m2 (2 mantissa bits,
    // the range of gradients that span many binades). The dp rule stays
    // first: rule indices key checkpointed codec state.
    const std::vector<WordType> words16 = {WordType::kBFloat16, WordType::kFloat16};
    return {preset_rule(dp_groups, {Role::kGradient}, zfp_rate(8), true,
                        "preset zhybrid: dp gradients"),
            preset_rule(model_groups, {Role::kActivationGrad}, fp8(Fp8Format::kE5M2), false,
                        "preset zhybrid: tp/pp activation gradients (16-bit words)", words16),
            preset_rule(model_groups, {}, fp8(Fp8Format::kE4M3), false,
                        "preset zhybrid: tp/pp 16-bit words", words16),
            preset_rule(model_groups, {}, zfp_rate(16), false,
                        "preset zhybrid: tp/pp float32 traffic", {WordType::kFloat32})};
  }
  if (preset == "auto") {
    // The same traffic as the fixed presets; each group picks per (op, role,
    // locality) from measurements (comm/adaptive_policy.h).
    return {auto_rule(dp_groups, {Role::kGradient}, auto_gradient_candidates(),
                      "preset auto: dp gradients"),
            auto_rule(model_groups, {}, auto_model_candidates(), "preset auto: tp/pp traffic")};
  }
  throw PolicyError("compression preset '" + preset +
                    "' is unknown (known: none, mzhybrid, zhybrid, auto)");
}

}  // namespace

PolicyRule sparse_embedding_rule() {
  PolicyRule rule;
  rule.match.groups = {GroupKind::kDp};
  rule.match.ops = {Op::kAllreduce};
  rule.match.roles = {Role::kEmbeddingGradient};
  rule.codec = compress::CodecSpec("block_sparse", {{"block", "256"}, {"select", "auto"}});
  rule.origin = "compression.sparse_embedding: auto";
  return rule;
}

std::vector<PolicyRule> preset_rules(const std::string& preset, const std::string& locality) {
  if (locality != "inter" && locality != "any")
    throw PolicyError("compression preset_locality '" + locality +
                      "' is unknown (known: inter, any)");
  std::vector<PolicyRule> rules = preset_rules_everywhere(preset);
  // Inside a node the wire costs little next to a codec: by default the
  // presets leave intra-node traffic (tp pairs on one node, say) raw.
  if (locality == "inter")
    for (auto& rule : rules) {
      rule.match.localities = {Locality::kInter};
      rule.origin += " (inter-node)";
    }
  return rules;
}

Policy::Policy(PolicyConfig config, compress::CodecRegistry registry)
    : config_(std::move(config)), registry_(std::move(registry)) {
  if (config_.min_bytes < 0)
    throw PolicyError("compression min_bytes must be >= 0, got " +
                      std::to_string(config_.min_bytes));
  if (!whole_floats(config_.chunk_bytes))
    throw PolicyError("compression chunk_bytes must be a positive multiple of 4, got " +
                      std::to_string(config_.chunk_bytes));
  if (!(config_.error_sample_rate >= 0.0 && config_.error_sample_rate <= 1.0))
    throw PolicyError("compression error_sample_rate must lie in [0, 1], got " +
                      std::to_string(config_.error_sample_rate));
  rules_ = config_.rules;
  for (auto& rule : preset_rules(config_.preset, config_.preset_locality))
    rules_.push_back(std::move(rule));
  if (config_.sparse_embedding != "auto" && config_.sparse_embedding != "off")
    throw PolicyError("compression sparse_embedding '" + config_.sparse_embedding +
                      "' is unknown (known: auto, off)");
  if (config_.sparse_embedding == "auto") {
    rules_.push_back(sparse_embedding_rule());
    match_order_.push_back(rules_.size() - 1);
  }
  for (size_t i = 0; i < rules_.size(); ++i)
    if (match_order_.empty() || i != match_order_.front()) match_order_.push_back(i);
  if (config_.plain_ring_min_bytes < 0)
    throw PolicyError("compression plain_ring_min_bytes must be >= 0 (0 = never), got " +
                      std::to_string(config_.plain_ring_min_bytes));
  if (config_.ranks_per_node < 0)
    throw PolicyError("compression ranks_per_node must be >= 0 (0 = as MPI sees nodes), got " +
                      std::to_string(config_.ranks_per_node));

  for (size_t i = 0; i < rules_.size(); ++i) {
    const PolicyRule& rule = rules_[i];
    const std::string name = rule_name(rule, i);
    const RuleMatch& m = rule.match;
    if (m.min_bytes < -1 || m.max_bytes < -1)
      throw PolicyError(name + ": min_bytes and max_bytes must be >= 0 (or unset)");
    if (rule.chunk_bytes != -1 && !whole_floats(rule.chunk_bytes))
      throw PolicyError(name + ": chunk_bytes must be a positive multiple of 4, got " +
                        std::to_string(rule.chunk_bytes));
    Bounds b;
    b.groups = mask_of(m.groups, kGroupKindCount);
    b.ops = mask_of(m.ops, kOpCount);
    b.roles = role_mask_of(m.roles);
    b.localities = mask_of(m.localities, kLocalityCount);
    b.words = mask_of(m.words, compress::kWordTypeCount);
    b.min_bytes = uint64_t(m.min_bytes >= 0 ? m.min_bytes : config_.min_bytes);
    b.max_bytes = m.max_bytes >= 0 ? uint64_t(m.max_bytes) : kNoMax;
    if (b.max_bytes < b.min_bytes)
      throw PolicyError(name + ": max_bytes " + std::to_string(b.max_bytes) +
                        " is below min_bytes " + std::to_string(b.min_bytes) +
                        ", so the rule can never match");
    b.chunk_bytes = size_t(rule.chunk_bytes >= 0 ? rule.chunk_bytes : config_.chunk_bytes);
    bounds_.push_back(b);

    if (!rule.candidates.empty()) {
      if (rule.codec || rule.error_feedback)
        throw PolicyError(name + ": an adaptive rule names its candidates, not one codec");
      if (rule.candidates.front().codec)
        throw PolicyError(name + ": an adaptive rule's first candidate must send raw");
      if (rule.candidates.size() > 255)
        throw PolicyError(name + ": an adaptive rule takes at most 255 candidates");
      for (const AutoCandidate& c : rule.candidates) {
        if (!c.codec) continue;
        if (is_powersgd(*c.codec) || c.codec->name() == "block_sparse")
          throw PolicyError(name + ": " + c.codec->name() + " cannot be an adaptive candidate");
        std::unique_ptr<compress::Codec> probe;
        try {
          probe = registry_.create(*c.codec);
        } catch (const std::exception& e) {
          throw PolicyError(name + ": candidate " + c.codec->to_string() + ": " + e.what());
        }
        if (c.error_feedback && probe->lossless())
          throw PolicyError(name + ": candidate " + c.codec->to_string() +
                            ": error feedback needs a lossy codec");
      }
      continue;
    }
    if (!rule.codec) {
      if (rule.error_feedback)
        throw PolicyError(name + ": error_feedback needs a lossy codec, the rule sends raw");
      continue;
    }
    if (is_powersgd(*rule.codec)) {
      const std::string problem = powersgd_rule_problem(rule);
      if (!problem.empty()) throw PolicyError(name + ": " + problem);
      try {
        parse_powersgd_settings(*rule.codec);
      } catch (const std::exception& e) {
        throw PolicyError(name + ": codec " + rule.codec->to_string() + ": " + e.what());
      }
      continue;
    }
    if (!registry_.contains(rule.codec->name())) {
      std::string known;
      for (const auto& n : registry_.names()) known += (known.empty() ? "" : ", ") + n;
      throw PolicyError(name + ": unknown codec '" + rule.codec->name() + "' (known: " + known +
                        ")");
    }
    std::unique_ptr<compress::Codec> probe;
    try {
      probe = registry_.create(*rule.codec);
    } catch (const std::exception& e) {
      throw PolicyError(name + ": codec " + rule.codec->to_string() + ": " + e.what());
    }
    if (rule.error_feedback && probe->lossless())
      throw PolicyError(name + ": error_feedback needs a lossy codec, '" + rule.codec->name() +
                        "' is lossless");
  }
}

Plan Policy::plan(GroupKind group, Op op, Role role, size_t bytes, Locality locality,
                  WordType word) const {
  return plan_from(0, group, op, role, bytes, locality, word);
}

Plan Policy::plan_after(const Plan& decided, GroupKind group, Op op, Role role, size_t bytes,
                        Locality locality, WordType word) const {
  if (decided.rule < 0) return decided;
  const size_t position =
      size_t(std::find(match_order_.begin(), match_order_.end(), size_t(decided.rule)) -
             match_order_.begin());
  return plan_from(position + 1, group, op, role, bytes, locality, word);
}

Plan Policy::plan_from(size_t position, GroupKind group, Op op, Role role, size_t bytes,
                       Locality locality, WordType word) const {
  for (; position < match_order_.size(); ++position) {
    const size_t i = match_order_[position];
    const Bounds& b = bounds_[i];
    if (!has(b.groups, int(group)) || !has(b.ops, int(op)) || !has(b.roles, int(role)) ||
        !has(b.localities, int(locality)) || !has(b.words, int(word)))
      continue;
    if (bytes < b.min_bytes || bytes > b.max_bytes) continue;
    Plan plan;
    // An adaptive rule's route is chosen while the job runs: raw until then.
    plan.codec = rules_[i].codec ? &*rules_[i].codec : nullptr;
    if (plan.codec && is_powersgd(*plan.codec)) std::swap(plan.codec, plan.low_rank);
    plan.error_feedback = rules_[i].error_feedback;
    plan.chunk_bytes = b.chunk_bytes;
    plan.rule = int(i);
    plan.origin = rules_[i].origin;
    return plan;
  }
  Plan plan;
  plan.chunk_bytes = size_t(config_.chunk_bytes);
  plan.origin = "default (no rule matched)";
  return plan;
}

PolicySlice::PolicySlice(const Policy& policy, GroupKind group) : group_(group) {
  double rate = policy.config().error_sample_rate;
  sample_every_ = rate > 0 ? std::max<uint64_t>(1, uint64_t(std::llround(1.0 / rate))) : 0;
  plain_ring_min_bytes_ = uint64_t(std::max<int64_t>(0, policy.config().plain_ring_min_bytes));
  plain_ring_chunk_elems_ =
      std::max<size_t>(1, size_t(policy.config().chunk_bytes) / sizeof(float));
  auto_settings_ = policy.config().auto_settings;

  const auto& rules = policy.rules();
  for (size_t i : policy.match_order()) {
    const Policy::Bounds& b = policy.bounds_[i];
    if (!has(b.groups, int(group))) continue;
    Route route;
    route.ops = b.ops;
    route.roles = b.roles;
    route.localities = b.localities;
    route.words = b.words;
    route.min_bytes = b.min_bytes;
    route.max_bytes = b.max_bytes;
    route.chunk_elems = std::max<size_t>(1, b.chunk_bytes / sizeof(float));
    route.rule = int(i);
    route.origin = rule_name(rules[i], i);
    if (!rules[i].candidates.empty()) {
      route.auto_rule = int(auto_rules_.size());
      auto_rules_.push_back(make_auto_rule(policy.registry(), rules[i], route));
    } else if (rules[i].codec && is_powersgd(*rules[i].codec)) {
      route.powersgd = parse_powersgd_settings(*rules[i].codec);  // validated by Policy
    } else if (rules[i].codec) {
      auto codec = policy.registry().create(*rules[i].codec);  // validated by Policy
      if (rules[i].error_feedback) {
        feedbacks_.push_back(std::make_unique<compress::ErrorFeedback>(std::move(codec)));
        route.feedback = feedbacks_.back().get();
        route.codec = &route.feedback->codec();
      } else {
        codecs_.push_back(std::move(codec));
        route.codec = codecs_.back().get();
      }
    }
    routes_.push_back(std::move(route));
  }

  for (int word = 0; word < compress::kWordTypeCount; ++word)
    for (int locality = 0; locality < kLocalityCount; ++locality)
      for (int op = 0; op < kOpCount; ++op)
        for (int role = 0; role < kRoleCount; ++role) {
          int& fixed = fixed_[word][locality][op][role];
          fixed = kNoRoute;
          for (size_t r = 0; r < routes_.size(); ++r) {
            const Route& route = routes_[r];
            if (!has(route.ops, op) || !has(route.roles, role) ||
                !has(route.localities, locality) || !has(route.words, word))
              continue;
            fixed = route.min_bytes == 0 && route.max_bytes == kNoMax ? int(r) : kBySize;
            break;
          }
        }
}

PolicySlice::AutoRule PolicySlice::make_auto_rule(const compress::CodecRegistry& registry,
                                                  const PolicyRule& rule, const Route& base) {
  AutoRule out;
  out.rule = base.rule;
  out.origin = base.origin;
  out.ops = base.ops;
  out.roles = base.roles;
  out.localities = base.localities;
  out.residuals = std::make_shared<compress::ErrorFeedback::Residuals>();
  for (size_t c = 0; c < rule.candidates.size(); ++c) {
    const AutoCandidate& candidate = rule.candidates[c];
    Route route = base;
    route.candidate = int(c);
    if (candidate.codec) {
      auto codec = registry.create(*candidate.codec);  // validated by Policy
      if (candidate.error_feedback) {
        feedbacks_.push_back(
            std::make_unique<compress::ErrorFeedback>(std::move(codec), out.residuals));
        route.feedback = feedbacks_.back().get();
        route.codec = &route.feedback->codec();
      } else {
        codecs_.push_back(std::move(codec));
        route.codec = codecs_.back().get();
      }
    }
    out.candidates.push_back(std::move(route));
  }
  return out;
}

void PolicySlice::choose(size_t auto_rule, Locality locality, Op op, Role role, size_t candidate) {
  AutoRule& rule = auto_rules_.at(auto_rule);
  if (candidate >= rule.candidates.size())
    throw std::out_of_range(rule.origin + ": no candidate " + std::to_string(candidate));
  rule.choice[int(locality)][int(op)][int(role)] = uint8_t(candidate);
}

const PolicySlice::Route* PolicySlice::scan(size_t first, Op op, Role role, size_t bytes,
                                            Locality locality, WordType word) const {
  for (size_t r = first; r < routes_.size(); ++r) {
    const Route& route = routes_[r];
    if (!has(route.ops, int(op)) || !has(route.roles, int(role)) ||
        !has(route.localities, int(locality)) || !has(route.words, int(word)))
      continue;
    if (bytes < route.min_bytes || bytes > route.max_bytes) continue;
    return &route;
  }
  return nullptr;
}

}  // namespace cmpi::comm
