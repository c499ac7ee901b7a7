// Policy engine: rule order, preset decisions for every (group, op, role,
// word type), byte bounds, raw rules, chunk sizes, and errors that name the
// rule.
#include "comm/policy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>

#include "compress/block_sparse_codec.h"
#include "compress/fp8_codec.h"
#include "compress/identity_codec.h"

namespace cmpi::comm {
namespace {

using compress::CodecSpec;
using compress::WordType;

constexpr WordType kWordTypes[] = {WordType::kFloat32, WordType::kBFloat16, WordType::kFloat16};

// A lossy stand-in for zfp in tests that must not depend on which codecs are
// built in: identity bytes, but declares itself lossy so that error feedback
// is accepted.
class StandInLossyCodec final : public compress::Codec {
 public:
  explicit StandInLossyCodec(const CodecSpec& spec) : Codec(spec) {}
  compress::CodecId id() const override { return compress::CodecId::kZfp; }
  bool lossless() const override { return false; }

 protected:
  size_t max_body_bytes(size_t n) const override { return n * sizeof(float); }
  size_t encode_body(const float* in, size_t n, uint8_t* out, size_t, uint16_t&) override {
    std::memcpy(out, in, n * sizeof(float));
    return n * sizeof(float);
  }
  void decode_body(const uint8_t* in, size_t, float* out, size_t n, uint16_t) const override {
    std::memcpy(out, in, n * sizeof(float));
  }
};

// identity plus stand-ins named like the preset codecs: zfp (lossy) and mpc
// (lossless), rejecting parameters the way real codecs do; fp8 itself (it
// needs nothing beyond the codec library).
compress::CodecRegistry test_registry() {
  compress::CodecRegistry registry;
  registry.add("identity",
               [](const CodecSpec& s) { return std::make_unique<compress::IdentityCodec>(s); });
  registry.add("zfp", [](const CodecSpec& s) {
    s.require_only({"mode", "rate"});
    return std::make_unique<StandInLossyCodec>(s);
  });
  registry.add("mpc", [](const CodecSpec& s) {
    return std::make_unique<compress::IdentityCodec>(CodecSpec(s.name()));
  });
  registry.add("block_sparse",
               [](const CodecSpec& s) { return std::make_unique<compress::BlockSparseCodec>(s); });
  registry.add("fp8", [](const CodecSpec& s) { return std::make_unique<compress::Fp8Codec>(s); });
  return registry;
}

PolicyRule rule(RuleMatch match, std::optional<CodecSpec> codec, std::string origin) {
  PolicyRule r;
  r.match = std::move(match);
  r.codec = std::move(codec);
  r.origin = std::move(origin);
  return r;
}

Policy make_policy(PolicyConfig config) {
  return Policy(std::move(config), test_registry());
}

std::string thrown_by(const std::function<void()>& f) {
  try {
    f();
  } catch (const PolicyError& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

constexpr size_t kMiB = 1 << 20;

TEST(Policy, FirstMatchingRuleWinsInOrder) {
  PolicyConfig config;
  config.rules.push_back(
      rule({{GroupKind::kDp}, {Op::kAllreduce}, {}, -1, -1}, CodecSpec("identity"), "x.yaml:3"));
  config.rules.push_back(rule({{GroupKind::kDp}, {}, {}, -1, -1}, CodecSpec("mpc"), "x.yaml:5"));
  Policy policy = make_policy(config);

  Plan first = policy.plan(GroupKind::kDp, Op::kAllreduce, Role::kGradient, kMiB);
  ASSERT_FALSE(first.raw());
  EXPECT_EQ(first.codec->name(), "identity");
  EXPECT_EQ(first.rule, 0);
  EXPECT_EQ(first.origin, "x.yaml:3");

  Plan second = policy.plan(GroupKind::kDp, Op::kAllgather, Role::kGradient, kMiB);
  ASSERT_FALSE(second.raw());
  EXPECT_EQ(second.codec->name(), "mpc");
  EXPECT_EQ(second.origin, "x.yaml:5");

  Plan none = policy.plan(GroupKind::kTp, Op::kAllreduce, Role::kGradient, kMiB);
  EXPECT_TRUE(none.raw());
  EXPECT_EQ(none.rule, -1);
  EXPECT_EQ(none.origin, "default (no rule matched)");
}

TEST(Policy, UserRulesPrecedePresetRules) {
  PolicyConfig config;
  config.preset = "zhybrid";
  config.rules.push_back(
      rule({{GroupKind::kDp}, {Op::kAllreduce}, {}, -1, -1}, CodecSpec("identity"), "user"));
  Policy policy = make_policy(config);
  ASSERT_EQ(policy.rules().size(), 6u);  // user, 4 preset, sparse_embedding
  EXPECT_EQ(policy.plan(GroupKind::kDp, Op::kAllreduce, Role::kGradient, kMiB).origin, "user");
  Plan preset = policy.plan(GroupKind::kDp, Op::kReduceScatter, Role::kGradient, kMiB);
  EXPECT_EQ(preset.origin, "preset zhybrid: dp gradients (inter-node)");
  EXPECT_TRUE(preset.error_feedback);
}

// An embedding's gradient is a gradient: rules naming `gradient` take it,
// rules naming `embedding_gradient` take nothing else.
TEST(Policy, EmbeddingGradientIsMatchedByGradientRules) {
  PolicyConfig config;
  config.sparse_embedding = "off";
  config.rules.push_back(
      rule({{GroupKind::kDp}, {Op::kReduceScatter}, {Role::kEmbeddingGradient}, -1, -1},
           CodecSpec("mpc"), "embedding only"));
  config.rules.push_back(
      rule({{GroupKind::kDp}, {}, {Role::kGradient}, -1, -1}, CodecSpec("identity"), "gradients"));
  Policy policy = make_policy(config);
  EXPECT_EQ(policy.rules().size(), 2u);
  EXPECT_EQ(policy.plan(GroupKind::kDp, Op::kAllreduce, Role::kEmbeddingGradient, kMiB).origin,
            "gradients");
  EXPECT_EQ(policy.plan(GroupKind::kDp, Op::kReduceScatter, Role::kEmbeddingGradient, kMiB).origin,
            "embedding only");
  EXPECT_EQ(policy.plan(GroupKind::kDp, Op::kReduceScatter, Role::kGradient, kMiB).origin,
            "gradients");
  EXPECT_TRUE(policy.plan(GroupKind::kDp, Op::kAllreduce, Role::kWeight, kMiB).raw());
}

// sparse_embedding: auto adds one rule, stored last (the others keep their
// indices, which name their codec state) and tried first; plan_after and
// route_after give what the message would get without it.
TEST(Policy, SparseEmbeddingRuleIsTriedFirstAndFallsThroughToTheNextRule) {
  PolicyConfig config;
  config.preset = "zhybrid";
  config.preset_locality = "any";
  config.rules.push_back(
      rule({{GroupKind::kDp}, {Op::kAllreduce}, {}, -1, -1}, CodecSpec("identity"), "user"));
  Policy policy = make_policy(config);
  ASSERT_EQ(policy.rules().size(), 6u);  // user, 4 preset, sparse_embedding
  EXPECT_EQ(policy.rules().back().origin, "compression.sparse_embedding: auto");
  EXPECT_EQ(policy.match_order().front(), 5u);

  const Plan sparse = policy.plan(GroupKind::kDp, Op::kAllreduce, Role::kEmbeddingGradient, kMiB);
  ASSERT_FALSE(sparse.raw());
  EXPECT_EQ(sparse.codec->name(), "block_sparse");
  EXPECT_EQ(sparse.codec->get_string("select", ""), "auto");
  EXPECT_EQ(sparse.rule, 5);
  const Plan after =
      policy.plan_after(sparse, GroupKind::kDp, Op::kAllreduce, Role::kEmbeddingGradient, kMiB);
  EXPECT_EQ(after.origin, "user");
  EXPECT_EQ(after.rule, 0);
  // Only dp allreduces of the embedding's gradient, above min_bytes.
  EXPECT_EQ(policy.plan(GroupKind::kDp, Op::kAllreduce, Role::kGradient, kMiB).origin, "user");
  EXPECT_EQ(
      policy.plan(GroupKind::kZero, Op::kReduceScatter, Role::kEmbeddingGradient, kMiB).origin,
      "preset zhybrid: dp gradients");
  EXPECT_EQ(policy.plan(GroupKind::kDp, Op::kAllreduce, Role::kEmbeddingGradient, 1024).rule, -1);

  PolicySlice slice(policy, GroupKind::kDp);
  const PolicySlice::Route* route = slice.route(Op::kAllreduce, Role::kEmbeddingGradient, kMiB);
  ASSERT_NE(route, nullptr);
  EXPECT_EQ(route->rule, 5);
  const PolicySlice::Route* next =
      slice.route_after(*route, Op::kAllreduce, Role::kEmbeddingGradient, kMiB);
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(next->origin, "user");
  EXPECT_EQ(slice.route_after(*next, Op::kAllreduce, Role::kEmbeddingGradient, kMiB)->origin,
            "preset zhybrid: dp gradients");

  config.sparse_embedding = "off";
  Policy off = make_policy(config);
  EXPECT_EQ(off.rules().size(), 5u);
  EXPECT_EQ(off.plan(GroupKind::kDp, Op::kAllreduce, Role::kEmbeddingGradient, kMiB).origin,
            "user");
  config.sparse_embedding = "sometimes";
  EXPECT_NE(thrown_by([&] { make_policy(config); }).find("sparse_embedding 'sometimes'"),
            std::string::npos);
}

// What each preset chooses, written out independently of preset_rules().
struct Expected {
  std::string codec;  // "" = raw
  std::string rate;   // zfp's rate, fp8's format
  bool error_feedback = false;
};

Expected expected_choice(const std::string& preset, GroupKind g, Op op, Role role, WordType word) {
  // sparse_embedding: auto (the default) tries block-sparse first.
  if (g == GroupKind::kDp && op == Op::kAllreduce && role == Role::kEmbeddingGradient)
    return {"block_sparse", "", false};
  // An embedding's gradient and DiLoCo's pseudo-gradient are gradients to
  // the presets (docs/policy.md).
  bool dp_gradient = (g == GroupKind::kDp || g == GroupKind::kZero) &&
                     (role == Role::kGradient || role == Role::kEmbeddingGradient ||
                      role == Role::kPseudoGradient);
  // Context parallelism's ring carries activations as tp and pp do.
  bool model = g == GroupKind::kTp || g == GroupKind::kPp || g == GroupKind::kCp;
  if (preset == "mzhybrid") {
    if (dp_gradient) return {"zfp", "16", false};
    if (model) return {"mpc", "", false};
  }
  if (preset == "zhybrid") {
    if (dp_gradient) return {"zfp", "8", true};
    // Half the bits of the value's own width: zfp rate 16 on float32, fp8 on
    // 16-bit words (e5m2 for activation gradients, e4m3 for the rest).
    if (model && word == WordType::kFloat32) return {"zfp", "16", false};
    if (model) return {"fp8", role == Role::kActivationGrad ? "e5m2" : "e4m3", false};
  }
  return {};
}

TEST(Policy, PresetsDecideEveryGroupOpRoleWordCombination) {
  for (std::string preset : {"none", "mzhybrid", "zhybrid"}) {
    PolicyConfig config;
    config.preset = preset;
    Policy policy = make_policy(config);
    for (int g = 0; g < kGroupKindCount; ++g) {
      PolicySlice slice(policy, GroupKind(g));
      for (int op = 0; op < kOpCount; ++op)
        for (int role = 0; role < kRoleCount; ++role)
          for (WordType word : kWordTypes) {
            SCOPED_TRACE(preset + " " + to_string(GroupKind(g)) + " " + to_string(Op(op)) + " " +
                         to_string(Role(role)) + " " + compress::word_type_name(word));
            Expected want = expected_choice(preset, GroupKind(g), Op(op), Role(role), word);
            Plan plan =
                policy.plan(GroupKind(g), Op(op), Role(role), 4 * kMiB, Locality::kInter, word);
            const PolicySlice::Route* route =
                slice.route(Op(op), Role(role), 4 * kMiB, Locality::kInter, word);
            if (want.codec.empty()) {
              EXPECT_TRUE(plan.raw());
              EXPECT_TRUE(route == nullptr || route->codec == nullptr);
              continue;
            }
            ASSERT_FALSE(plan.raw());
            EXPECT_EQ(plan.codec->name(), want.codec);
            ASSERT_NE(route, nullptr);
            EXPECT_EQ(route->rule, plan.rule);
            if (want.codec == "zfp") {
              EXPECT_EQ(plan.codec->get_string("mode", ""), "rate");
              EXPECT_EQ(plan.codec->get_string("rate", ""), want.rate);
            }
            if (want.codec == "fp8") {
              EXPECT_EQ(plan.codec->get_string("format", ""), want.rate);
              EXPECT_NE(plan.origin.find("16-bit words"), std::string::npos) << plan.origin;
            }
            EXPECT_EQ(plan.error_feedback, want.error_feedback);
            EXPECT_NE(plan.origin.find(want.codec == "block_sparse" ? "sparse_embedding"
                                                                    : "preset " + preset),
                      std::string::npos);
            // Below the default min_bytes every preset sends raw.
            EXPECT_TRUE(
                policy.plan(GroupKind(g), Op(op), Role(role), 1024, Locality::kInter, word).raw());
          }
    }
  }
}

// `match.words`: a rule takes only messages of the word types it lists; the
// policy and every slice agree, whatever the size, locality and order.
TEST(Policy, RuleMatchesOnWordType) {
  PolicyConfig config;
  config.min_bytes = 0;
  RuleMatch bf16_only, sixteen_bit_grads, float32_only;
  bf16_only.words = {WordType::kBFloat16};
  sixteen_bit_grads.words = {WordType::kBFloat16, WordType::kFloat16};
  sixteen_bit_grads.roles = {Role::kActivationGrad};
  float32_only.words = {WordType::kFloat32};
  float32_only.max_bytes = kMiB;  // a size bound: the slice must scan
  config.rules = {rule(sixteen_bit_grads, CodecSpec("fp8", {{"format", "e5m2"}}), "16-bit grads"),
                  rule(bf16_only, CodecSpec("fp8"), "bf16 words"),
                  rule(float32_only, CodecSpec("mpc"), "float32 up to 1 MiB")};
  Policy policy = make_policy(config);
  const auto origin_of = [&](Role role, size_t bytes, WordType word) {
    return std::string(
        policy.plan(GroupKind::kTp, Op::kAllreduce, role, bytes, Locality::kIntra, word).origin);
  };
  EXPECT_EQ(origin_of(Role::kActivationGrad, kMiB, WordType::kFloat16), "16-bit grads");
  EXPECT_EQ(origin_of(Role::kActivationGrad, kMiB, WordType::kBFloat16), "16-bit grads");
  EXPECT_EQ(origin_of(Role::kActivation, kMiB, WordType::kBFloat16), "bf16 words");
  EXPECT_EQ(origin_of(Role::kActivation, kMiB, WordType::kFloat16), "default (no rule matched)");
  EXPECT_EQ(origin_of(Role::kActivationGrad, kMiB, WordType::kFloat32), "float32 up to 1 MiB");
  EXPECT_EQ(origin_of(Role::kActivation, kMiB + 1, WordType::kFloat32),
            "default (no rule matched)");
  // The default word type is float32: callers that move floats say nothing.
  EXPECT_EQ(policy.plan(GroupKind::kDp, Op::kAllreduce, Role::kGradient, 10).origin,
            "float32 up to 1 MiB");

  for (int g = 0; g < kGroupKindCount; ++g) {
    PolicySlice slice(policy, GroupKind(g));
    for (WordType word : kWordTypes)
      for (int locality = 0; locality < kLocalityCount; ++locality)
        for (int op = 0; op < kOpCount; ++op)
          for (int role = 0; role < kRoleCount; ++role)
            for (size_t bytes : {size_t(0), kMiB, kMiB + 1}) {
              SCOPED_TRACE(std::string(to_string(GroupKind(g))) + " " + to_string(Op(op)) + " " +
                           to_string(Role(role)) + " " + compress::word_type_name(word) + " " +
                           std::to_string(bytes));
              const Plan plan =
                  policy.plan(GroupKind(g), Op(op), Role(role), bytes, Locality(locality), word);
              const PolicySlice::Route* route =
                  slice.route(Op(op), Role(role), bytes, Locality(locality), word);
              ASSERT_EQ(route == nullptr, plan.rule < 0);
              if (route) EXPECT_EQ(route->origin, plan.origin);
            }
  }
}

// Presets compress only inter-node messages by default; preset_locality
// "any" gives the research's literal presets, intra-node traffic included.
TEST(Policy, PresetsCompressOnlyInterNodeTrafficUnlessAskedForAny) {
  for (std::string preset : {"mzhybrid", "zhybrid"}) {
    for (std::string locality : {"inter", "any"}) {
      SCOPED_TRACE(preset + " preset_locality " + locality);
      PolicyConfig config;
      config.preset = preset;
      config.preset_locality = locality;
      Policy policy = make_policy(config);
      for (GroupKind g : {GroupKind::kDp, GroupKind::kTp, GroupKind::kPp}) {
        const Role role = g == GroupKind::kDp ? Role::kGradient : Role::kActivation;
        const Op op = g == GroupKind::kPp ? Op::kSendRecv : Op::kAllreduce;
        EXPECT_FALSE(policy.plan(g, op, role, 4 * kMiB, Locality::kInter).raw());
        EXPECT_EQ(policy.plan(g, op, role, 4 * kMiB, Locality::kIntra).raw(), locality == "inter");
        PolicySlice slice(policy, g);
        EXPECT_NE(slice.route(op, role, 4 * kMiB, Locality::kInter), nullptr);
        EXPECT_EQ(slice.route(op, role, 4 * kMiB, Locality::kIntra) == nullptr,
                  locality == "inter");
      }
    }
  }
  PolicyConfig bad;
  bad.preset = "zhybrid";
  bad.preset_locality = "sometimes";
  EXPECT_THROW(make_policy(bad), PolicyError);
}

TEST(Policy, RuleMatchesOnLocality) {
  PolicyConfig config;
  config.min_bytes = 0;
  RuleMatch intra_only, inter_only;
  intra_only.localities = {Locality::kIntra};
  inter_only.localities = {Locality::kInter};
  PolicyRule intra = rule(intra_only, CodecSpec("mpc"), "intra");
  PolicyRule inter = rule(inter_only, CodecSpec("zfp", {{"mode", "rate"}, {"rate", "8"}}), "inter");
  config.rules = {intra, inter};
  Policy policy = make_policy(config);
  EXPECT_EQ(
      policy.plan(GroupKind::kTp, Op::kAllreduce, Role::kActivation, kMiB, Locality::kIntra).origin,
      "intra");
  EXPECT_EQ(
      policy.plan(GroupKind::kTp, Op::kAllreduce, Role::kActivation, kMiB, Locality::kInter).origin,
      "inter");
  PolicySlice slice(policy, GroupKind::kPp);
  EXPECT_EQ(slice.route(Op::kSendRecv, Role::kActivation, 10, Locality::kIntra)->origin, "intra");
  EXPECT_EQ(slice.route(Op::kSendRecv, Role::kActivation, 10, Locality::kInter)->origin, "inter");
}

TEST(Policy, PresetsBuildWithTheBuiltinCodecs) {
  auto builtin = compress::CodecRegistry::with_builtin_codecs();
  if (!builtin.contains("zfp") || !builtin.contains("mpc"))
    GTEST_SKIP() << "zfp or mpc is not registered in the builtin codec registry yet";
  for (std::string preset : {"mzhybrid", "zhybrid"}) {
    PolicyConfig config;
    config.preset = preset;
    EXPECT_NO_THROW(Policy{config}) << preset;
  }
}

TEST(Policy, MinBytesBoundaryUsesPolicyDefaultOrTheRulesOwn) {
  PolicyConfig config;
  config.min_bytes = 65536;
  config.rules.push_back(rule({{GroupKind::kDp}, {}, {}, -1, -1}, CodecSpec("identity"), "dp"));
  config.rules.push_back(rule({{GroupKind::kTp}, {}, {}, 0, -1}, CodecSpec("identity"), "tp"));
  Policy policy = make_policy(config);
  EXPECT_TRUE(policy.plan(GroupKind::kDp, Op::kAllreduce, Role::kGradient, 65535).raw());
  EXPECT_FALSE(policy.plan(GroupKind::kDp, Op::kAllreduce, Role::kGradient, 65536).raw());
  // The tp rule's own min_bytes: 0 lets even empty messages through it.
  EXPECT_FALSE(policy.plan(GroupKind::kTp, Op::kAllreduce, Role::kGradient, 0).raw());
  EXPECT_FALSE(policy.plan(GroupKind::kTp, Op::kAllreduce, Role::kGradient, 4).raw());
}

TEST(Policy, MaxBytesIsInclusiveAndLargerMessagesFallThrough) {
  PolicyConfig config;
  config.rules.push_back(rule({{}, {}, {}, 0, 1000}, CodecSpec("identity"), "small"));
  config.rules.push_back(rule({{}, {}, {}, 1000, -1}, CodecSpec("mpc"), "large"));
  Policy policy = make_policy(config);
  EXPECT_EQ(policy.plan(GroupKind::kPp, Op::kSendRecv, Role::kActivation, 999).origin, "small");
  EXPECT_EQ(policy.plan(GroupKind::kPp, Op::kSendRecv, Role::kActivation, 1000).origin, "small");
  EXPECT_EQ(policy.plan(GroupKind::kPp, Op::kSendRecv, Role::kActivation, 1001).origin, "large");
}

TEST(Policy, RuleWithoutCodecSendsRawAndShadowsThePreset) {
  PolicyConfig config;
  config.preset = "mzhybrid";
  config.rules.push_back(rule({{GroupKind::kPp}, {}, {Role::kActivationGrad}, -1, -1}, std::nullopt,
                              "keep pp gradients raw"));
  Policy policy = make_policy(config);
  Plan raw = policy.plan(GroupKind::kPp, Op::kSendRecv, Role::kActivationGrad, kMiB);
  EXPECT_TRUE(raw.raw());
  EXPECT_EQ(raw.origin, "keep pp gradients raw");
  EXPECT_EQ(raw.rule, 0);
  EXPECT_FALSE(policy.plan(GroupKind::kPp, Op::kSendRecv, Role::kActivation, kMiB).raw());
}

TEST(Policy, ChunkBytesDefaultsToThePolicysAndRulesOverrideIt) {
  PolicyConfig config;
  config.sparse_embedding = "off";  // the dp slice holds the user rule alone
  config.chunk_bytes = 1 << 20;
  config.rules.push_back(rule({{GroupKind::kDp}, {}, {}, -1, -1}, CodecSpec("identity"), "dp"));
  PolicyRule own = rule({{GroupKind::kTp}, {}, {}, -1, -1}, CodecSpec("identity"), "tp");
  own.chunk_bytes = 4096;
  config.rules.push_back(own);
  Policy policy = make_policy(config);
  EXPECT_EQ(policy.plan(GroupKind::kDp, Op::kAllreduce, Role::kGradient, kMiB).chunk_bytes,
            size_t(1) << 20);
  EXPECT_EQ(policy.plan(GroupKind::kTp, Op::kAllreduce, Role::kGradient, kMiB).chunk_bytes, 4096u);
  PolicySlice tp(policy, GroupKind::kTp);
  ASSERT_EQ(tp.routes().size(), 1u);
  EXPECT_EQ(tp.routes()[0].chunk_elems, 1024u);
  PolicySlice dp(policy, GroupKind::kDp);
  ASSERT_EQ(dp.routes().size(), 1u);
  EXPECT_EQ(dp.routes()[0].chunk_elems, size_t(1) << 18);
}

TEST(Policy, ErrorsNameTheRulesOrigin) {
  auto build = [](PolicyRule r) {
    return [r] {
      PolicyConfig config;
      config.rules.push_back(r);
      make_policy(config);
    };
  };
  std::string unknown = thrown_by(build(rule({}, CodecSpec("lz77"), "configs/run.yaml:14")));
  EXPECT_NE(unknown.find("configs/run.yaml:14"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("unknown codec 'lz77'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("identity"), std::string::npos) << unknown;  // lists the known ones

  std::string param =
      thrown_by(build(rule({}, CodecSpec("zfp", {{"speed", "9"}}), "configs/run.yaml:20")));
  EXPECT_NE(param.find("configs/run.yaml:20"), std::string::npos) << param;
  EXPECT_NE(param.find("speed"), std::string::npos) << param;

  PolicyRule lossless = rule({}, CodecSpec("mpc"), "configs/run.yaml:30");
  lossless.error_feedback = true;
  std::string ef = thrown_by(build(lossless));
  EXPECT_NE(ef.find("configs/run.yaml:30"), std::string::npos) << ef;
  EXPECT_NE(ef.find("lossless"), std::string::npos) << ef;

  PolicyRule raw_ef = rule({}, std::nullopt, "configs/run.yaml:31");
  raw_ef.error_feedback = true;
  EXPECT_NE(thrown_by(build(raw_ef)).find("configs/run.yaml:31"), std::string::npos);

  std::string bounds = thrown_by(
      build(rule({{}, {}, {}, 4096, 1024}, CodecSpec("identity"), "configs/run.yaml:40")));
  EXPECT_NE(bounds.find("configs/run.yaml:40"), std::string::npos) << bounds;
  EXPECT_NE(bounds.find("never match"), std::string::npos) << bounds;

  PolicyRule tiny_chunk = rule({}, CodecSpec("identity"), "configs/run.yaml:50");
  for (int64_t bad : {int64_t(2), int64_t(4097), int64_t(0)}) {
    tiny_chunk.chunk_bytes = bad;
    std::string chunk = thrown_by(build(tiny_chunk));
    EXPECT_NE(chunk.find("configs/run.yaml:50"), std::string::npos) << chunk;
    EXPECT_NE(chunk.find("multiple of 4"), std::string::npos) << chunk;
  }

  // Rules without an origin are named by their position.
  PolicyConfig two;
  two.rules.push_back(rule({}, CodecSpec("identity"), ""));
  two.rules.push_back(rule({}, CodecSpec("nope"), ""));
  EXPECT_NE(thrown_by([&] { make_policy(two); }).find("compression rule #2"), std::string::npos);
}

TEST(Policy, InvalidSettingsAreRejectedByName) {
  PolicyConfig preset;
  preset.preset = "turbo";
  std::string p = thrown_by([&] { make_policy(preset); });
  EXPECT_NE(p.find("'turbo'"), std::string::npos) << p;
  EXPECT_NE(p.find("zhybrid"), std::string::npos) << p;

  PolicyConfig min;
  min.min_bytes = -5;
  EXPECT_NE(thrown_by([&] { make_policy(min); }).find("min_bytes"), std::string::npos);
  PolicyConfig chunk;
  chunk.chunk_bytes = 0;
  EXPECT_NE(thrown_by([&] { make_policy(chunk); }).find("chunk_bytes"), std::string::npos);
  chunk.chunk_bytes = 1002;
  EXPECT_NE(thrown_by([&] { make_policy(chunk); }).find("chunk_bytes"), std::string::npos);
  PolicyConfig rate;
  rate.error_sample_rate = 1.5;
  EXPECT_NE(thrown_by([&] { make_policy(rate); }).find("error_sample_rate"), std::string::npos);
}

TEST(PolicySlice, AgreesWithThePolicyForItsGroup) {
  PolicyConfig config;
  config.preset = "zhybrid";
  config.min_bytes = 4096;
  config.rules.push_back(rule({{}, {Op::kHalo}, {}, 0, 100}, CodecSpec("identity"), "tiny halos"));
  config.rules.push_back(
      rule({{GroupKind::kSp}, {}, {Role::kHalo}, 200, -1}, CodecSpec("mpc"), "sp halos"));
  config.rules.push_back(
      rule({{GroupKind::kDp}, {Op::kBroadcast}, {}, -1, -1}, std::nullopt, "raw dp broadcast"));
  Policy policy = make_policy(config);
  for (int g = 0; g < kGroupKindCount; ++g) {
    PolicySlice slice(policy, GroupKind(g));
    EXPECT_EQ(slice.group(), GroupKind(g));
    for (int op = 0; op < kOpCount; ++op)
      for (int role = 0; role < kRoleCount; ++role)
        for (size_t bytes : {size_t(0), size_t(100), size_t(101), size_t(200), size_t(4095),
                             size_t(4096), size_t(1) << 30}) {
          SCOPED_TRACE(std::string(to_string(GroupKind(g))) + " " + to_string(Op(op)) + " " +
                       to_string(Role(role)) + " " + std::to_string(bytes));
          Plan plan = policy.plan(GroupKind(g), Op(op), Role(role), bytes);
          const PolicySlice::Route* route = slice.route(Op(op), Role(role), bytes);
          if (plan.rule < 0) {
            EXPECT_EQ(route, nullptr);
            continue;
          }
          ASSERT_NE(route, nullptr);
          EXPECT_EQ(route->rule, plan.rule);
          EXPECT_EQ(route->origin, plan.origin);
          EXPECT_EQ(route->codec == nullptr, plan.raw());
          EXPECT_EQ(route->feedback != nullptr, plan.error_feedback);
          if (route->codec) EXPECT_EQ(route->codec->name(), plan.codec->name());
          if (route->feedback) EXPECT_EQ(route->codec, &route->feedback->codec());
        }
  }
}

TEST(PolicySlice, HoldsOnlyItsGroupsRulesAndKnowsWhenSizeMatters) {
  PolicyConfig config;
  config.sparse_embedding = "off";  // else the dp slice holds its rule
  config.rules.push_back(
      rule({{GroupKind::kTp}, {Op::kAlltoall}, {}, 0, -1}, CodecSpec("identity"), "any size"));
  config.rules.push_back(
      rule({{GroupKind::kTp}, {Op::kAllgather}, {}, -1, -1}, CodecSpec("identity"), "large only"));
  Policy policy = make_policy(config);
  PolicySlice dp(policy, GroupKind::kDp);
  EXPECT_TRUE(dp.routes().empty());
  EXPECT_TRUE(dp.size_independent(Op::kAlltoall, Role::kActivation));
  EXPECT_EQ(dp.route(Op::kAlltoall, Role::kActivation, kMiB), nullptr);
  PolicySlice tp(policy, GroupKind::kTp);
  EXPECT_EQ(tp.routes().size(), 2u);
  EXPECT_TRUE(tp.size_independent(Op::kAlltoall, Role::kActivation));
  EXPECT_NE(tp.route(Op::kAlltoall, Role::kActivation, 0), nullptr);
  EXPECT_FALSE(tp.size_independent(Op::kAllgather, Role::kActivation));
  EXPECT_TRUE(tp.size_independent(Op::kBroadcast, Role::kActivation));
}

TEST(PolicySlice, ErrorSamplingIsEveryKthLossyCall) {
  auto every = [](double rate) {
    PolicyConfig config;
    config.error_sample_rate = rate;
    Policy policy = make_policy(config);
    return PolicySlice(policy, GroupKind::kDp).sample_every();
  };
  EXPECT_EQ(every(0.0), 0u);
  EXPECT_EQ(every(1.0), 1u);
  EXPECT_EQ(every(0.01), 100u);
  EXPECT_EQ(every(0.3), 3u);
}

}  // namespace
}  // namespace cmpi::comm

namespace cmpi::comm {
namespace {

RuleMatch dp_gradient_allreduce() {
  RuleMatch m;
  m.groups = {GroupKind::kDp};
  m.ops = {Op::kAllreduce};
  m.roles = {Role::kGradient};
  return m;
}

TEST(Policy, PowerSgdRuleSendsRawAndMarksTheRouteLowRank) {
  PolicyConfig config;
  config.preset = "zhybrid";
  config.rules.push_back(
      rule(dp_gradient_allreduce(), CodecSpec("powersgd", {{"rank", "8"}}), "configs/run.yaml:3"));
  const Policy policy = make_policy(config);
  const Plan plan = policy.plan(GroupKind::kDp, Op::kAllreduce, Role::kGradient, kMiB);
  EXPECT_TRUE(plan.raw());
  ASSERT_NE(plan.low_rank, nullptr);
  EXPECT_EQ(plan.low_rank->name(), "powersgd");
  PolicySlice dp(policy, GroupKind::kDp);
  const PolicySlice::Route* route = dp.route(Op::kAllreduce, Role::kGradient, kMiB);
  ASSERT_NE(route, nullptr);
  EXPECT_EQ(route->codec, nullptr);
  ASSERT_TRUE(route->powersgd.has_value());
  EXPECT_EQ(route->powersgd->rank, 8);
  // Other dp traffic still takes the preset's rule.
  EXPECT_FALSE(policy.plan(GroupKind::kDp, Op::kAllgather, Role::kGradient, kMiB).raw());
}

TEST(Policy, PowerSgdRuleMustMatchOnlyDpGradientAllreduces) {
  auto build = [](RuleMatch match, CodecSpec codec, bool feedback = false) {
    return [=] {
      PolicyConfig config;
      config.rules.push_back(rule(match, codec, "configs/run.yaml:9"));
      config.rules.back().error_feedback = feedback;
      make_policy(config);
    };
  };
  RuleMatch tp = dp_gradient_allreduce();
  tp.groups = {GroupKind::kTp};
  RuleMatch any_op = dp_gradient_allreduce();
  any_op.ops.clear();
  RuleMatch weights = dp_gradient_allreduce();
  weights.roles = {Role::kWeight};
  const CodecSpec psgd("powersgd");
  for (const auto& [what, message] : std::vector<std::pair<std::string, std::string>>{
           {"group", thrown_by(build(tp, psgd))},
           {"op", thrown_by(build(any_op, psgd))},
           {"role", thrown_by(build(weights, psgd))},
           {"error_feedback", thrown_by(build(dp_gradient_allreduce(), psgd, true))},
           {"rank",
            thrown_by(build(dp_gradient_allreduce(), CodecSpec("powersgd", {{"rank", "0"}})))},
       }) {
    EXPECT_NE(message.find("configs/run.yaml:9"), std::string::npos) << what << ": " << message;
    EXPECT_NE(message.find(what), std::string::npos) << what << ": " << message;
  }
}

}  // namespace
}  // namespace cmpi::comm
