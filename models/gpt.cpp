#include "models/gpt.h"

#include <ATen/CPUGeneratorImpl.h>

#include <map>
#include <stdexcept>
#include <string>

#include "models/gpt_param_unit.h"
#include "models/transformer_block.h"
#include "parallel/low_precision_ops.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/tensor/sequence_parallel_ops.h"
#include "parallel/tensor/tensor_parallel_layers.h"
#include "parallel/tensor/vocab_parallel_cross_entropy.h"
#include "parallel/unmaterialised.h"
#include "parallel/zero/layer_gate_ops.h"

namespace cmpi::models {
namespace {

// Error-feedback keys of the tp traffic: one per call site, distinct across
// layers, so a lossy rule with error feedback keeps one residual per site.
constexpr uint64_t kEmbeddingKey = 1;
uint64_t block_key(int64_t layer) {
  return 2 + 4 * uint64_t(layer);
}
uint64_t head_key(const GptOptions& o) {
  return block_key(o.layers);
}
uint64_t loss_key(const GptOptions& o) {
  return block_key(o.layers) + 1;
}

StagePlan resolved(StagePlan stage, const GptOptions& options) {
  if (stage.end_layer == -1) stage.end_layer = options.layers;
  if (stage.first_layer < 0 || stage.first_layer > stage.end_layer ||
      stage.end_layer > options.layers)
    throw std::invalid_argument("stage plan: layers [" + std::to_string(stage.first_layer) + ", " +
                                std::to_string(stage.end_layer) + ") do not lie within the " +
                                std::to_string(options.layers) + " layers of the model");
  return stage;
}

}  // namespace

GptImpl::GptImpl(const GptOptions& options, parallel::ProcessGroups& groups, StagePlan stage)
    : options_(options), stage_(resolved(stage, options)), tp_(&groups.tp()) {
  if (groups.cp().size() > 1) {
    context_shard_ = std::make_unique<parallel::ContextShard>(options.seq_len, groups.cp().size(),
                                                              groups.cp().rank());
    context_ = parallel::ContextGroup{&groups.cp(), context_shard_.get()};
  }
  const int64_t local_seq = options.seq_len / groups.cp().size();
  if (options.hidden <= 0 || options.heads <= 0 || options.hidden % options.heads != 0)
    throw std::invalid_argument("model.hidden (" + std::to_string(options.hidden) +
                                ") must be a positive multiple of model.heads (" +
                                std::to_string(options.heads) + ")");
  parallel::tp_split(options.hidden, *tp_, "model.hidden");
  if (stage_.has_embedding || (stage_.has_head && options.tie_embeddings))
    token_embedding_ = register_module(
        "token_embedding", std::make_shared<parallel::VocabParallelEmbeddingImpl>(
                               options.vocab_size, options.hidden, *tp_, kEmbeddingKey,
                               options.materialize_parameters, options.sequence_parallel,
                               options.tp_sums_in_compute_dtype ? compute_dtype() : torch::kFloat,
                               options.padded_vocab_size(tp_->size())));
  if (options.sequence_parallel && local_seq % tp_->size() != 0)
    throw std::invalid_argument("model.seq_len (" + std::to_string(options.seq_len) +
                                ") / the cp group size (" + std::to_string(groups.cp().size()) +
                                ") must be divisible by the tp group size (" +
                                std::to_string(tp_->size()) + ") under sequence parallelism");
  if (stage_.has_embedding && options.learned_positions()) {
    torch::nn::EmbeddingOptions position(options.seq_len, options.hidden);
    if (!options.materialize_parameters)
      position._weight(parallel::unmaterialised({options.seq_len, options.hidden}));
    position_embedding_ = register_module("position_embedding", torch::nn::Embedding(position));
  }
  dropout_ = register_module("dropout", torch::nn::Dropout(options.dropout));
  // A rank's own dropout streams. The attention's heads are the tp rank's
  // and its positions the cp rank's: its stream is per tp and cp rank (the
  // cp suffix only under cp, so that other layouts keep their streams). The
  // residual stream's positions are the tp rank's own under sequence
  // parallelism, and the cp rank's under context parallelism, where its tp
  // ranks hold the same activations and must draw the same masks.
  const std::string cp_suffix =
      context_.active() ? "@cp" + std::to_string(groups.cp().rank()) : std::string();
  const std::string rank_suffix = "@tp" + std::to_string(tp_->rank()) + cp_suffix;
  const bool stream_per_cp_rank = context_.active() && !options.sequence_parallel;
  if (options.sequence_parallel || context_.active())
    embedding_dropout_generator_ = at::make_generator<at::CPUGeneratorImpl>(parameter_seed(
        options.seed, "embedding.dropout" + (stream_per_cp_rank ? cp_suffix : rank_suffix)));
  // The [seq_len, seq_len] causal mask of the single-rank attention paths;
  // the ring (context parallelism) masks its diagonal chunks itself, and at
  // long context the whole mask would take seq_len² bytes.
  const auto future_mask =
      context_.active() ? torch::Tensor() : causal_future_mask(options.seq_len);
  for (int64_t layer = stage_.first_layer; layer < stage_.end_layer; ++layer) {
    const std::string name = "block" + std::to_string(layer);
    const uint64_t dropout_seed =
        parameter_seed(options.seed, name + ".attention.dropout" + rank_suffix);
    std::optional<uint64_t> stream_seed;
    if (stream_per_cp_rank)
      stream_seed = parameter_seed(options.seed, name + ".stream.dropout" + cp_suffix);
    blocks_.push_back(register_module(
        name, std::make_shared<TransformerBlockImpl>(options, *tp_, block_key(layer), dropout_seed,
                                                     future_mask, context_, stream_seed)));
    // Full recomputation: the stage's first recompute_layers blocks (0: all).
    const int64_t index = layer - stage_.first_layer;
    const bool whole = options.recompute == Recompute::kFull &&
                       (options.recompute_layers == 0 || index < options.recompute_layers);
    blocks_.back()->set_recompute(whole ? Recompute::kFull
                                  : options.recompute == Recompute::kSelective
                                      ? Recompute::kSelective
                                      : Recompute::kNone);
  }
  if (stage_.has_head) final_norm_ = register_module("final_norm", Norm(options, options.hidden));
  if (stage_.has_head && !options.tie_embeddings)
    // Only its table is used (the logits' projection), split like the embedding's.
    output_head_ = register_module(
        "output_head",
        std::make_shared<parallel::VocabParallelEmbeddingImpl>(
            options.vocab_size, options.hidden, *tp_, kEmbeddingKey, options.materialize_parameters,
            /*sequence_parallel=*/false, torch::kFloat, options.padded_vocab_size(tp_->size())));
  collect_layouts();
  torch::NoGradGuard no_grad;
  for (const auto& layout : layouts_) {
    if (options_.materialize_parameters)
      initialise_shard(layout, options_.seed, tp_->rank(), tp_->size());
    else if (parallel::is_materialised(layout.tensor))  // the norms' few floats
      layout.tensor.set_data(parallel::unmaterialised(layout.tensor.sizes()));
  }
}

void GptImpl::fill_initial_values(size_t param, size_t offset, size_t length, float* out) const {
  const auto& layout = layouts_.at(param);
  if (offset + length > size_t(layout.tensor.numel()))
    throw std::out_of_range("GPT initial values: [" + std::to_string(offset) + ", " +
                            std::to_string(offset + length) + ") of " + layout.name + " (" +
                            std::to_string(layout.tensor.numel()) + " elements)");
  initial_values(layout, layout.tensor.sizes().vec(), options_.seed, tp_->rank(), tp_->size(),
                 offset, length, out);
}

parallel::LayerSchedule GptImpl::layer_schedule() const {
  parallel::LayerSchedule schedule;
  for (size_t i = 0; i < layouts_.size(); ++i) {
    const std::string unit = gpt_param_unit(layouts_[i].name).name();
    if (schedule.unit_names.empty() || schedule.unit_names.back() != unit) {
      schedule.unit_names.push_back(unit);
      schedule.unit_ends.push_back(i + 1);
    } else {
      schedule.unit_ends.back() = i + 1;
    }
  }
  const auto unit_named = [&](const std::string& name) {
    for (size_t u = 0; u < schedule.unit_names.size(); ++u)
      if (schedule.unit_names[u] == name) return u;
    throw std::logic_error("GPT layer schedule: no unit " + name);
  };
  if (stage_.has_embedding) schedule.uses.push_back({unit_named("embedding")});
  for (size_t i = 0; i < blocks_.size(); ++i)
    schedule.uses.push_back(
        {unit_named("block" + std::to_string(stage_.first_layer + int64_t(i)))});
  if (stage_.has_head && options_.tie_embeddings)
    schedule.uses.push_back({unit_named("head"), unit_named("embedding")});
  else if (stage_.has_head)
    schedule.uses.push_back({unit_named("head")});
  return schedule;
}

// Lists every parameter with its layout, in registration order, and checks
// that the list and the registered parameters agree one to one.
void GptImpl::collect_layouts() {
  using Init = ParamLayout::Init;
  std::vector<ParamLayout> described;
  if (token_embedding_)
    described.push_back({kTokenEmbeddingWeight, token_embedding_->weight, 0, Init::kNormal,
                         options_.input_init_std(), true, options_.vocab_size});
  if (position_embedding_)
    described.push_back({"position_embedding.weight", position_embedding_->weight, -1,
                         Init::kNormal, options_.input_init_std(), false});
  for (size_t i = 0; i < blocks_.size(); ++i)
    blocks_[i]->describe("block" + std::to_string(stage_.first_layer + int64_t(i)) + ".", options_,
                         described);
  if (final_norm_) {
    described.push_back({"final_norm.weight", final_norm_->weight, -1, Init::kOnes, 0, false});
    if (final_norm_->bias.defined())
      described.push_back({"final_norm.bias", final_norm_->bias, -1, Init::kZeros, 0, false});
  }
  if (output_head_)
    described.push_back({"output_head.weight", output_head_->weight, 0, Init::kNormal,
                         options_.input_init_std(), true, options_.vocab_size});
  std::map<std::string, ParamLayout> by_name;
  for (auto& layout : described) by_name.emplace(layout.name, std::move(layout));
  for (const auto& item : named_parameters()) {
    auto found = by_name.find(item.key());
    if (found == by_name.end() || !found->second.tensor.is_same(item.value()))
      throw std::logic_error("GPT parameter " + item.key() + " has no layout");
    layouts_.push_back(std::move(found->second));
    by_name.erase(found);
  }
  if (!by_name.empty())
    throw std::logic_error("GPT layout " + by_name.begin()->first + " names no parameter");
}

torch::Tensor GptImpl::embed(const torch::Tensor& tokens) {
  if (!stage_.has_embedding)
    throw std::logic_error("GPT embed: this pipeline stage holds no embedding");
  if (tokens.dim() != 2)
    throw std::invalid_argument("GPT embed: tokens must be [batch, time], got " +
                                c10::str(tokens.sizes()));
  if (tokens.size(1) > options_.seq_len)
    throw std::invalid_argument("sequence of " + std::to_string(tokens.size(1)) +
                                " tokens exceeds model.seq_len " +
                                std::to_string(options_.seq_len));
  const auto local_tokens = context_part(tokens);
  const int64_t time = local_tokens.size(1);
  // The global positions of this rank's tokens.
  const auto positions = context_.active()
                             ? context_shard_->positions().to(local_tokens.device())
                             : torch::arange(time, local_tokens.options().dtype(torch::kLong));
  parallel::enter_use(gate_, 0, torch::Tensor());
  auto embedded = token_embedding_->forward(local_tokens);
  // Rotary positions enter in every attention instead (models/rotary_embedding.h).
  if (position_embedding_ && options_.sequence_parallel) {
    const auto shard = parallel::sequence_shard(time, *tp_);
    const auto table = parallel::sum_gradient_over_tp(position_embedding_->weight, *tp_);
    embedded = embedded + torch::embedding(table, positions.narrow(0, shard.first, shard.count));
  } else if (position_embedding_) {
    embedded = embedded + position_embedding_->forward(positions);
  }
  // Looked up (and summed over tp) in float32, rounded to the compute dtype
  // (tp_sums_in_compute_dtype: rounded before the tp sum, which is exact).
  return parallel::leave_use(gate_, 0, embedding_dropout(embedded).to(compute_dtype()));
}

torch::Tensor GptImpl::context_part(const torch::Tensor& x) const {
  return context_.active() ? context_shard_->take(x) : x;
}

torch::Tensor GptImpl::embedding_dropout(const torch::Tensor& x) {
  if (!options_.sequence_parallel && !context_.active()) return dropout_->forward(x);
  return dropout_drawn_from(x, is_training() ? options_.dropout : 0.0,
                            embedding_dropout_generator_);
}

torch::ScalarType GptImpl::compute_dtype() const {
  switch (options_.precision) {
    case ComputePrecision::kBf16:
      return torch::kBFloat16;
    case ComputePrecision::kFp16:
      return torch::kHalf;
    case ComputePrecision::kFp32:
      break;
  }
  return torch::kFloat;
}

torch::Tensor GptImpl::run_blocks(const torch::Tensor& hidden,
                                  std::vector<torch::Tensor>* block_outputs) {
  // A pipeline stage receives its input widened to float32 (exact).
  auto x = hidden.to(compute_dtype());
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const size_t use = first_block_use() + i;
    x = parallel::leave_use(gate_, use, blocks_[i]->forward(parallel::enter_use(gate_, use, x)));
    if (block_outputs) block_outputs->push_back(x.detach());
  }
  return x;
}

torch::Tensor GptImpl::head_loss(const torch::Tensor& hidden, const torch::Tensor& targets) {
  if (!stage_.has_head) throw std::logic_error("GPT head_loss: this pipeline stage holds no head");
  const auto input = parallel::enter_use(gate_, head_use(), hidden.to(compute_dtype()));
  // Logits in the compute dtype; the cross-entropy in float32.
  auto logits = logits_of(input);
  auto loss =
      parallel::vocab_parallel_cross_entropy(logits.to(torch::kFloat), context_part(targets), *tp_,
                                             loss_key(options_), options_.vocab_size)
          .mean();
  return parallel::leave_use(gate_, head_use(), loss);
}

torch::Tensor GptImpl::loss(const torch::Tensor& tokens, const torch::Tensor& targets) {
  require_whole_model("loss");
  return head_loss(run_blocks(embed(tokens)), targets);
}

torch::Tensor GptImpl::forward(const torch::Tensor& tokens,
                               std::vector<torch::Tensor>* block_outputs) {
  require_whole_model("forward");
  const auto input =
      parallel::enter_use(gate_, head_use(), run_blocks(embed(tokens), block_outputs));
  auto logits = logits_of(input);
  return parallel::leave_use(gate_, head_use(), logits.to(torch::kFloat));
}

KvCache GptImpl::make_kv_cache(int64_t batch) const {
  return KvCache(int64_t(blocks_.size()), batch, options_.kv_head_count() / tp_->size(),
                 options_.seq_len, options_.head_dim(), compute_dtype());
}

torch::Tensor GptImpl::forward_cached(const torch::Tensor& tokens, KvCache& cache) {
  require_whole_model("forward_cached");
  if (is_training() || options_.sequence_parallel || gate_ || context_.active())
    throw std::logic_error(
        "GPT forward_cached is for inference: eval mode, no sequence or context parallelism, no "
        "layer gate");
  if (tokens.dim() != 2 || tokens.size(0) != cache.batch())
    throw std::invalid_argument("GPT forward_cached: tokens must be [" +
                                std::to_string(cache.batch()) + ", time], got " +
                                c10::str(tokens.sizes()));
  const int64_t start = cache.length(), time = tokens.size(1);
  if (start + time > options_.seq_len)
    throw std::out_of_range("positions up to " + std::to_string(start + time) +
                            " exceed model.seq_len " + std::to_string(options_.seq_len));
  // As embed() in eval mode (its dropouts are identities), positions from
  // `start`; rotary positions enter in every attention instead.
  auto embedded = token_embedding_->forward(tokens);
  if (position_embedding_)
    embedded = embedded + position_embedding_->forward(torch::arange(
                              start, start + time, tokens.options().dtype(torch::kLong)));
  auto x = embedded.to(compute_dtype());
  for (size_t i = 0; i < blocks_.size(); ++i) x = blocks_[i]->forward_cached(x, cache, int64_t(i));
  cache.advance(time);
  return logits_of(x).to(torch::kFloat);
}

std::vector<parallel::ParamInfo> GptImpl::param_infos() const {
  std::vector<parallel::ParamInfo> infos;
  infos.reserve(layouts_.size());
  for (const auto& layout : layouts_)
    infos.push_back({layout.name, layout.tensor, layout.split_dim >= 0, layout.weight_decay});
  return infos;
}

torch::Tensor GptImpl::tied_embedding_weight() const {
  return token_embedding_ && options_.tie_embeddings ? token_embedding_->weight : torch::Tensor();
}

torch::Tensor GptImpl::final_norm(const torch::Tensor& x) {
  return final_norm_->forward(x, options_.sequence_parallel ? tp_ : nullptr);
}

torch::Tensor GptImpl::logits_of(const torch::Tensor& hidden) {
  return parallel::vocab_parallel_logits(final_norm(hidden), head_weight(), *tp_,
                                         head_key(options_), options_.sequence_parallel,
                                         options_.vocab_size);
}

torch::Tensor GptImpl::head_weight() const {
  return options_.tie_embeddings ? token_embedding_->weight : output_head_->weight;
}

void GptImpl::require_whole_model(const char* what) const {
  if (!stage_.has_embedding || !stage_.has_head || stage_.first_layer != 0 ||
      stage_.end_layer != options_.layers)
    throw std::logic_error(std::string("GPT ") + what +
                           " needs the whole model; this pipeline stage holds part of it");
}

std::vector<std::pair<std::string, at::Generator>> GptImpl::dropout_generators() {
  std::vector<std::pair<std::string, at::Generator>> out;
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const std::string block = "block" + std::to_string(stage_.first_layer + int64_t(i));
    out.emplace_back(block + ".attention.dropout", blocks_[i]->attention->dropout_generator());
    if (blocks_[i]->attention->has_stream_dropout_generator())
      out.emplace_back(block + ".stream.dropout",
                       blocks_[i]->attention->stream_dropout_generator());
  }
  if ((options_.sequence_parallel || context_.active()) && stage_.has_embedding)
    out.emplace_back("embedding.dropout", embedding_dropout_generator_);
  return out;
}

}  // namespace cmpi::models
