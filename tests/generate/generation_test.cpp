// The KV cache and the decoding loop on small random GPTs of the three
// shapes (GPT-2: learned positions; GPT-NeoX: partial rotary, parallel
// residual, untied head; Llama: RMSNorm, SwiGLU, grouped-query attention,
// scaled whole-head rotary):
//  * the cached forward's logits equal the full forward's at every
//    position, the sequence fed in chunks of several sizes (float32,
//    |difference| <= 1e-5 x max(1, max |logit|));
//  * greedy tokens with the cache equal greedy tokens of a reference that
//    reruns the whole sequence for every token, up to model.seq_len;
//  * sampling: top-k 1 and a tiny top-p are greedy, one seed gives one
//    sequence, another seed another;
//  * stops (end of document, budget, seq_len) and bad prompts.
// Weights are drawn with a wide init_std so that the logits' top two
// differ by far more than the rounding the cache changes (the smallest
// margin is printed on failure). One MPI rank (the model's process group).
#include <gtest/gtest.h>
#include <mpi.h>
#include <torch/torch.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "generate/token_generator.h"
#include "generate/token_sampler.h"
#include "models/gpt.h"
#include "parallel/mesh/process_groups.h"
#include "tests/support/test_seed.h"

namespace cmpi::generate {
namespace {

enum class Shape { kGpt2, kNeox, kLlama };

std::string name_of(Shape shape) {
  switch (shape) {
    case Shape::kGpt2:
      return "Gpt2";
    case Shape::kNeox:
      return "Neox";
    case Shape::kLlama:
      return "Llama";
  }
  return "?";
}

models::GptOptions options_for(Shape shape, uint64_t seed) {
  models::GptOptions o;
  o.vocab_size = 48;
  o.seq_len = 24;
  o.layers = 2;
  o.hidden = 32;
  o.heads = 4;
  o.init_std = 0.3;
  o.seed = seed;
  if (shape == Shape::kNeox) {
    o.position = models::PositionEncoding::kRotary;
    o.rotary_pct = 0.5;  // 4 of each head's 8 dimensions turn
    o.parallel_residual = true;
    o.activation = models::MlpActivation::kGeluTanh;
    o.init = models::InitScheme::kNeox;
    o.tie_embeddings = false;
  } else if (shape == Shape::kLlama) {
    o.norm = models::NormKind::kRmsNorm;
    o.activation = models::MlpActivation::kSwiGlu;
    o.intermediate_size = 40;
    o.kv_heads = 2;  // two query heads per key/value head
    o.bias = false;
    o.position = models::PositionEncoding::kRotary;
    o.rotary_pct = 1.0;
    o.rotary_base = 500000.0;
    o.rope_scaling = {8.0, 1.0, 4.0, 16};
    o.tie_embeddings = false;
  }
  return o;
}

struct ShapeTest : ::testing::TestWithParam<Shape> {
  void SetUp() override {
    seed = cmpi::testing::test_seed();
    torch::manual_seed(seed);
    groups = std::make_unique<parallel::ProcessGroups>(MPI_COMM_SELF, parallel::ParallelDims{});
    model = models::Gpt(options_for(GetParam(), seed), *groups);
    model->eval();
  }
  std::vector<int64_t> random_tokens(int64_t count) const {
    const auto t = torch::randint(model->options().vocab_size, {count}, torch::kLong);
    return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + count);
  }
  // Greedy decoding by the definition: the whole sequence through the
  // plain forward for every new token. Records the smallest gap between
  // the two highest logits it chose from.
  std::vector<int64_t> reference_greedy(std::vector<int64_t> sequence, int64_t count,
                                        double& smallest_margin) {
    torch::NoGradGuard no_grad;
    std::vector<int64_t> out;
    smallest_margin = std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < count; ++i) {
      const auto logits =
          model->forward(torch::tensor(sequence, torch::kLong).unsqueeze(0))[0].select(0, -1);
      const auto top = std::get<0>(logits.topk(2));
      smallest_margin = std::min(smallest_margin, (top[0] - top[1]).item<double>());
      const int64_t token = logits.argmax().item<int64_t>();
      out.push_back(token);
      sequence.push_back(token);
    }
    return out;
  }

  uint64_t seed = 0;
  std::unique_ptr<parallel::ProcessGroups> groups;
  models::Gpt model{nullptr};
};

TEST_P(ShapeTest, CachedLogitsEqualTheFullForwardAtEveryPosition) {
  torch::NoGradGuard no_grad;
  const int64_t time = model->options().seq_len;
  const auto tokens = torch::randint(model->options().vocab_size, {2, time}, torch::kLong);
  const auto full = model->forward(tokens);
  // A prompt of 5, single tokens, a chunk of 3, then single tokens to the end.
  auto cache = model->make_kv_cache(2);
  std::vector<torch::Tensor> pieces;
  int64_t at = 0;
  for (const int64_t chunk : {5, 1, 1, 3}) {
    pieces.push_back(model->forward_cached(tokens.narrow(1, at, chunk), cache));
    at += chunk;
  }
  while (at < time) pieces.push_back(model->forward_cached(tokens.narrow(1, at++, 1), cache));
  const auto cached = torch::cat(pieces, 1);
  ASSERT_EQ(cached.sizes(), full.sizes());
  EXPECT_EQ(cache.length(), time);
  const double scale = std::max(1.0, full.abs().max().item<double>());
  const double difference = (cached - full).abs().max().item<double>();
  EXPECT_LE(difference, 1e-5 * scale)
      << name_of(GetParam()) << ": max |cached - full| " << difference << ", largest |logit| "
      << scale << " (seed " << seed << ")";
  // A position past model.seq_len is refused, the cache unchanged.
  EXPECT_THROW(model->forward_cached(tokens.narrow(1, 0, 1), cache), std::out_of_range);
  EXPECT_EQ(cache.length(), time);
}

TEST_P(ShapeTest, GreedyTokensWithTheCacheEqualTheFullForwardReference) {
  const auto prompt = random_tokens(4);
  const int64_t room = model->options().seq_len - int64_t(prompt.size());
  double margin = 0;
  const auto expected = reference_greedy(prompt, room, margin);
  TokenGenerator generator(model);
  TokenSampler greedy(SamplingOptions{});
  GenerationSettings settings;
  settings.max_new_tokens = 1000;
  const Generated cached = generator.run(prompt, settings, greedy);
  EXPECT_EQ(cached.tokens, expected) << name_of(GetParam()) << ": smallest top-2 logit margin "
                                     << margin << " (seed " << seed << ")";
  EXPECT_EQ(cached.stop, Stop::kSeqLen);
  settings.use_cache = false;
  EXPECT_EQ(generator.run(prompt, settings, greedy).tokens, expected) << "seed " << seed;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ShapeTest,
                         ::testing::Values(Shape::kGpt2, Shape::kNeox, Shape::kLlama),
                         [](const auto& info) { return name_of(info.param); });

struct Gpt2Decoding : ShapeTest {};

std::vector<int64_t> generate_with(TokenGenerator& generator, const std::vector<int64_t>& prompt,
                                   const SamplingOptions& sampling, int64_t count = 16) {
  TokenSampler sampler(sampling);
  GenerationSettings settings;
  settings.max_new_tokens = count;
  return generator.run(prompt, settings, sampler).tokens;
}

TEST_P(Gpt2Decoding, TopKOneAndATinyTopPAreGreedy) {
  const auto prompt = random_tokens(3);
  TokenGenerator generator(model);
  const auto greedy = generate_with(generator, prompt, {});
  EXPECT_EQ(generate_with(generator, prompt, {1.0, 1, 1.0, seed}), greedy) << "seed " << seed;
  EXPECT_EQ(generate_with(generator, prompt, {1.0, 0, 1e-6, seed}), greedy) << "seed " << seed;
}

TEST_P(Gpt2Decoding, OneSeedGivesOneSequenceAnotherSeedAnother) {
  const auto prompt = random_tokens(3);
  TokenGenerator generator(model);
  const SamplingOptions hot{2.0, 0, 1.0, seed};
  const auto first = generate_with(generator, prompt, hot);
  EXPECT_EQ(generate_with(generator, prompt, hot), first) << "seed " << seed;
  SamplingOptions other = hot;
  other.seed = seed + 1;
  EXPECT_NE(generate_with(generator, prompt, other), first) << "seed " << seed;
}

TEST_P(Gpt2Decoding, StopsAtTheEndOfDocumentAndTheBudget) {
  const auto prompt = random_tokens(3);
  TokenGenerator generator(model);
  TokenSampler greedy(SamplingOptions{});
  GenerationSettings settings;
  settings.max_new_tokens = 5;
  const Generated budget = generator.run(prompt, settings, greedy);
  EXPECT_EQ(budget.tokens.size(), 5u);
  EXPECT_EQ(budget.stop, Stop::kBudget);
  // The second greedy token as the end of document: generation ends at its
  // first occurrence (the first token, when greedy repeats it), eod included.
  settings.end_of_document = budget.tokens[1];
  const auto first_eod =
      std::find(budget.tokens.begin(), budget.tokens.end(), settings.end_of_document);
  std::vector<int64_t> streamed;
  const Generated ended =
      generator.run(prompt, settings, greedy, [&](int64_t id) { streamed.push_back(id); });
  EXPECT_EQ(ended.stop, Stop::kEndOfDocument);
  EXPECT_EQ(ended.tokens, std::vector<int64_t>(budget.tokens.begin(), first_eod + 1))
      << "seed " << seed;
  EXPECT_EQ(streamed, ended.tokens);
  settings.max_new_tokens = 0;
  EXPECT_TRUE(generator.run(prompt, settings, greedy).tokens.empty());
}

TEST_P(Gpt2Decoding, RefusesPromptsOutsideTheVocabularyOrTooLong) {
  TokenGenerator generator(model);
  TokenSampler greedy(SamplingOptions{});
  const GenerationSettings settings;
  const int64_t vocab = model->options().vocab_size, seq_len = model->options().seq_len;
  EXPECT_THROW(generator.run({1, vocab}, settings, greedy), std::invalid_argument);
  EXPECT_THROW(generator.run({-1}, settings, greedy), std::invalid_argument);
  EXPECT_THROW(generator.run({}, settings, greedy), std::invalid_argument);
  EXPECT_THROW(generator.run(std::vector<int64_t>(size_t(seq_len), 1), settings, greedy),
               std::invalid_argument);
  EXPECT_NO_THROW(generator.run(std::vector<int64_t>(size_t(seq_len - 1), 1), settings, greedy));
}

INSTANTIATE_TEST_SUITE_P(Gpt2, Gpt2Decoding, ::testing::Values(Shape::kGpt2),
                         [](const auto& info) { return name_of(info.param); });

}  // namespace
}  // namespace cmpi::generate
