#include "models/family/gpt_family.h"

#include <cmath>
#include <string>

#include "config/config_loader.h"
#include "config/units.h"

namespace cmpi::models {
namespace {

using config::Config;
using config::fail_at;

// Rotary dimensions turn in pairs (models/rotary_embedding.h): each head
// needs an even, positive number of them.
void check_rotary(const Config& c) {
  const int64_t head_dim = c.model.hidden / c.model.heads;
  const int64_t dims = gpt_options(c.model).rotary_dims();
  if (dims < 2 || dims % 2 != 0)
    fail_at(c, "model.rotary_pct",
            "rotates head_dim x rotary_pct = " + std::to_string(head_dim) + " x " +
                config::format_real(c.model.rotary_pct) + " -> " + std::to_string(dims) +
                " dimensions per head (rounded down); rotary needs an even number >= 2");
}

void validate(const Config& c) {
  if (c.parallel.bidirectional)
    fail_at(c, "parallel.bidirectional",
            "the bi-directional pipeline is implemented for model.kind resnet only");
  if (c.data.kind == config::DataKind::kImages)
    fail_at(c, "data.kind", "images are read only by model.kind resnet (model.kind is gpt)");
  if (c.model.hidden % c.model.heads != 0)
    fail_at(c, "model.heads",
            "model.hidden (" + std::to_string(c.model.hidden) +
                ") must be divisible by model.heads (" + std::to_string(c.model.heads) + ")");
  if (c.model.position == "rotary") check_rotary(c);
  if (c.model.kv_heads > 0 && c.model.heads % c.model.kv_heads != 0)
    fail_at(c, "model.kv_heads",
            "model.heads (" + std::to_string(c.model.heads) +
                ") must be divisible by model.kv_heads (" + std::to_string(c.model.kv_heads) +
                "): each key/value head serves the same number of query heads");
  if (c.model.kv_heads > c.model.heads)
    fail_at(c, "model.kv_heads", "exceeds model.heads (" + std::to_string(c.model.heads) + ")");
  if (c.model.rope_scaling_factor > 0 && c.model.position != "rotary")
    fail_at(c, "model.rope_scaling_factor",
            "scales rotary positions; model.position is " + c.model.position);
  if (c.model.rope_scaling_factor > 0 &&
      !(c.model.rope_high_freq_factor > c.model.rope_low_freq_factor))
    fail_at(c, "model.rope_high_freq_factor",
            "must exceed model.rope_low_freq_factor (" +
                config::format_real(c.model.rope_low_freq_factor) + ")");
  if (c.parallel.sequence_parallel && c.model.seq_len % c.parallel.tensor != 0)
    fail_at(c, "parallel.sequence_parallel",
            "splits every sequence over the parallel.tensor (" + std::to_string(c.parallel.tensor) +
                ") ranks, so model.seq_len (" + std::to_string(c.model.seq_len) +
                ") must be divisible by it");
  if (c.data.branching > c.model.vocab_size)
    fail_at(c, "data.branching",
            "a token cannot have more successors than model.vocab_size (" +
                std::to_string(c.model.vocab_size) + "), got " + std::to_string(c.data.branching));
}

parallel::ModelShape layout_shape(const config::ModelConfig& model) {
  parallel::ModelShape shape;
  shape.layers = model.layers;
  shape.heads = model.heads;
  shape.hidden = model.hidden;
  shape.vocab_size = model.vocab_size;
  shape.vocab_multiple = model.vocab_multiple;
  shape.kv_heads = model.kv_heads;
  shape.mlp_width = model.intermediate_size;
  shape.image_rows = 0;  // a GPT has no spatial dimension
  shape.seq_len = model.seq_len;
  return shape;
}

// The GPT's architecture switches that change what the weights mean without
// changing their shapes count too, or a resume would silently run other
// arithmetic on the same tensors; each is listed only when it differs from
// GPT-2's, so the checkpoints of GPT-2 style models keep their metadata (and
// older ones still load). Rotary positions are recorded as the rotating
// dimensions per head (also what drops the position table) and the base
// rounded to an integer. model.init is not recorded: it shapes only the
// initial weights, which a resume replaces.
std::map<std::string, int64_t> checkpoint_shape_of(const config::ModelConfig& m) {
  std::map<std::string, int64_t> shape{{"vocab_size", m.vocab_size},
                                       {"seq_len", m.seq_len},
                                       {"layers", m.layers},
                                       {"hidden", m.hidden},
                                       {"heads", m.heads},
                                       {"mlp_ratio", m.mlp_ratio},
                                       {"tie_embeddings", m.tie_embeddings ? 1 : 0}};
  const GptOptions o = gpt_options(m);
  if (!o.learned_positions()) {
    shape["rotary_dims"] = o.rotary_dims();
    shape["rotary_base"] = int64_t(std::llround(o.rotary_base));
  }
  if (o.parallel_residual) shape["parallel_residual"] = 1;
  if (o.activation == MlpActivation::kGeluTanh) shape["mlp_activation_gelu_tanh"] = 1;
  // The Llama switches, likewise only where they differ from GPT-2's.
  if (o.activation == MlpActivation::kSwiGlu) shape["mlp_activation_swiglu"] = 1;
  if (o.norm == NormKind::kRmsNorm) shape["norm_rmsnorm"] = 1;
  if (o.kv_heads > 0 && o.kv_heads != o.heads) shape["kv_heads"] = o.kv_heads;
  if (o.intermediate_size > 0 && o.intermediate_size != o.mlp_ratio * o.hidden)
    shape["intermediate_size"] = o.intermediate_size;
  if (!o.bias) shape["bias"] = 0;
  if (o.rope_scaling.factor > 0) {
    // Recorded in thousandths: the metadata holds integers.
    shape["rope_scaling_factor_milli"] = std::llround(o.rope_scaling.factor * 1000);
    shape["rope_original_max_positions"] = o.rope_scaling.original_max_positions;
  }
  return shape;
}

}  // namespace

GptOptions gpt_options(const config::ModelConfig& m) {
  GptOptions o;
  o.vocab_size = m.vocab_size;
  o.vocab_multiple = m.vocab_multiple;
  o.seq_len = m.seq_len;
  o.layers = m.layers;
  o.hidden = m.hidden;
  o.heads = m.heads;
  o.mlp_ratio = m.mlp_ratio;
  o.dropout = m.dropout;
  o.init_std = m.init_std;
  o.tie_embeddings = m.tie_embeddings;
  o.position = m.position == "rotary" ? PositionEncoding::kRotary : PositionEncoding::kLearned;
  o.rotary_pct = m.rotary_pct;
  o.rotary_base = m.rotary_base;
  o.attention_block_size = m.attention_block_size;
  o.attention_backend =
      m.attention_backend == config::AttentionBackend::kFused     ? AttentionBackend::kFused
      : m.attention_backend == config::AttentionBackend::kUnfused ? AttentionBackend::kUnfused
                                                                  : AttentionBackend::kAuto;
  o.parallel_residual = m.parallel_residual;
  o.activation = m.mlp_activation == "gelu_tanh" ? MlpActivation::kGeluTanh
                 : m.mlp_activation == "swiglu"  ? MlpActivation::kSwiGlu
                                                 : MlpActivation::kGelu;
  o.init = m.init == "neox" ? InitScheme::kNeox : InitScheme::kGpt2;
  o.norm = m.norm == config::Normalization::kRmsNorm ? NormKind::kRmsNorm : NormKind::kLayerNorm;
  o.norm_eps = m.norm_eps;
  o.kv_heads = m.kv_heads;
  o.intermediate_size = m.intermediate_size;
  o.bias = m.bias;
  o.rope_scaling.factor = m.rope_scaling_factor;
  o.rope_scaling.low_freq_factor = m.rope_low_freq_factor;
  o.rope_scaling.high_freq_factor = m.rope_high_freq_factor;
  o.rope_scaling.original_max_positions = m.rope_original_max_positions;
  return o;
}

parallel::MemoryEstimateInput gpt_memory_estimate_input(const Config& c,
                                                        const parallel::ParallelDims& dims) {
  parallel::MemoryEstimateInput in;
  in.vocab_size = gpt_options(c.model).padded_vocab_size(dims.tp);
  in.seq_len = c.model.seq_len;
  in.layers = c.model.layers;
  in.hidden = c.model.hidden;
  in.heads = c.model.heads;
  in.mlp_ratio = c.model.mlp_ratio;
  in.kv_heads = c.model.kv_heads;
  in.mlp_width = c.model.intermediate_size;
  in.gated_mlp = c.model.mlp_activation == "swiglu";
  in.bias = c.model.bias;
  in.rms_norm = c.model.norm == config::Normalization::kRmsNorm;
  in.tie_embeddings = c.model.tie_embeddings;
  in.learned_positions = c.model.position == "learned";
  in.dp = dims.dp * dims.cp;  // the dp group spans cp
  in.cp = dims.cp;
  in.tp = dims.tp;
  in.pp = dims.pp;
  in.zero_stage = dims.zero_stage;
  in.micro_batch = c.training.micro_batch;
  in.micro_batches = c.training.global_batch / (c.training.micro_batch * dims.dp);
  in.gpipe = c.parallel.schedule == config::PipelineSchedule::kGpipe;
  in.stage_layers = c.parallel.stage_layers;
  in.auto_balance = c.parallel.pipeline_balance == "auto";
  in.bucket_bytes = c.parallel.dp_bucket_bytes;
  in.zero3_per_layer = c.parallel.zero3_gather == "layer";
  in.shard_gradient_memory = c.parallel.zero_gradient_memory == "shard";
  in.activation_value_bytes = config::value_bytes(c.training.precision);
  in.parallel_residual = c.model.parallel_residual;
  in.dropout = c.model.dropout > 0;
  in.recompute = c.training.recompute == "full"        ? parallel::ActivationRecompute::kFull
                 : c.training.recompute == "selective" ? parallel::ActivationRecompute::kSelective
                                                       : parallel::ActivationRecompute::kNone;
  in.recompute_layers = c.training.recompute_layers;
  in.sequence_parallel = c.parallel.sequence_parallel;
  in.diloco = c.parallel.dp_sync == "diloco";
  return in;
}

std::vector<int64_t> gpt_stage_layers(const Config& c, const parallel::ParallelDims& dims) {
  return parallel::stage_layers_of(gpt_memory_estimate_input(c, dims));
}

ModelFamilySpec gpt_family() {
  ModelFamilySpec spec;
  spec.id = config::ModelFamily::kGpt;
  spec.validate = validate;
  spec.layout_shape = layout_shape;
  spec.checkpoint_shape = checkpoint_shape_of;
  spec.estimate_stage_memory = [](const Config& c, const parallel::ParallelDims& dims) {
    return parallel::estimate_stage_memory(gpt_memory_estimate_input(c, dims));
  };
  spec.reads_tokens = true;
  return spec;
}

}  // namespace cmpi::models
