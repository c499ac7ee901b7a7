#include "hf/hf_model_config.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <utility>

namespace cmpi::hf {
namespace {

using data::JsonValue;

// The shortest decimal text that reads back as the same double, with a
// fraction so that Python reads a float ("10000.0", "0.25", "1e-05").
std::string number_text(double value) {
  char buffer[32];
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(buffer, sizeof buffer, "%.1f", value);
    return buffer;
  }
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

std::string integer_text(int64_t value) {
  return std::to_string(value);
}

// Builds a JSON object one member a line, in the order written.
class JsonObjectText {
 public:
  JsonObjectText& raw(const std::string& key, const std::string& value) {
    text_ += std::string(text_.empty() ? "{\n" : ",\n") + "  \"" + key + "\": " + value;
    return *this;
  }
  JsonObjectText& str(const std::string& key, const std::string& value) {
    return raw(key, "\"" + value + "\"");
  }
  JsonObjectText& flag(const std::string& key, bool value) {
    return raw(key, value ? "true" : "false");
  }
  std::string done() const { return text_ + "\n}\n"; }

 private:
  std::string text_;
};

// GELU with erf is Hugging Face's "gelu"; its tanh approximation is
// "gelu_new" (also spelled gelu_fast, gelu_pytorch_tanh: the same formula).
std::string hf_activation(const config::ModelConfig& model) {
  return model.mlp_activation == "gelu_tanh" ? "gelu_new" : "gelu";
}

// Reads config.json's fields with the Hugging Face classes' defaults and
// words the disagreements. `prefix` names a nested object's fields in
// messages ("rope_parameters.").
class FieldChecker {
 public:
  FieldChecker(const JsonValue& json, const std::string& path, std::string prefix = "")
      : json_(json), path_(path), prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(path_ + ": " + what);
  }
  const JsonValue* find(const std::string& field) const { return json_.find(field); }
  const std::string& path() const { return path_; }
  double number(const std::string& field, double fallback) const {
    const JsonValue* v = json_.find(field);
    if (!v || v->is_null()) return fallback;
    if (v->kind() != JsonValue::Kind::kNumber)
      fail(prefix_ + field + " is " + JsonValue::kind_name(v->kind()) + ", expected a number");
    return v->number();
  }
  int64_t integer(const std::string& field, int64_t fallback) const {
    const double value = number(field, double(fallback));
    const JsonValue* v = json_.find(field);
    if (!v || v->is_null()) return fallback;
    if (!v->exact_integer())
      fail(prefix_ + field + " is " + number_text(value) + ", not a whole number of at most 2^53");
    return *v->exact_integer();
  }
  bool boolean(const std::string& field, bool fallback) const {
    const JsonValue* v = json_.find(field);
    if (!v || v->is_null()) return fallback;
    if (v->kind() != JsonValue::Kind::kBool)
      fail(prefix_ + field + " is " + JsonValue::kind_name(v->kind()) + ", expected true or false");
    return v->boolean();
  }
  std::string string(const std::string& field, const std::string& fallback) const {
    const JsonValue* v = json_.find(field);
    if (!v || v->is_null()) return fallback;
    if (v->kind() != JsonValue::Kind::kString)
      fail(prefix_ + field + " is " + JsonValue::kind_name(v->kind()) + ", expected a string");
    return v->text();
  }
  void same(const std::string& field, int64_t theirs, const std::string& key, int64_t ours) const {
    if (theirs != ours)
      fail(field + " is " + integer_text(theirs) + ", but " + key + " is " + integer_text(ours));
  }
  void same_real(const std::string& field, double theirs, const std::string& key,
                 double ours) const {
    if (std::fabs(theirs - ours) > 1e-9 * std::fabs(ours))
      fail(field + " is " + number_text(theirs) + ", but " + key + " is " + number_text(ours));
  }
  void same_flag(const std::string& field, bool theirs, const std::string& key, bool ours) const {
    if (theirs != ours)
      fail(field + " is " + std::string(theirs ? "true" : "false") + ", but " + key + " is " +
           (ours ? "true" : "false"));
  }
  // hidden_act / activation_function: "gelu" (erf) or a tanh approximation.
  void same_activation(const std::string& field, const std::string& theirs,
                       const config::ModelConfig& model) const {
    std::string ours_in_hf;
    if (theirs == "gelu")
      ours_in_hf = "gelu";
    else if (theirs == "gelu_new" || theirs == "gelu_fast" || theirs == "gelu_pytorch_tanh")
      ours_in_hf = "gelu_tanh";
    else
      fail(field + " '" + theirs +
           "' is not supported (gelu, or the tanh approximation gelu_new / gelu_fast / "
           "gelu_pytorch_tanh)");
    if (ours_in_hf != model.mlp_activation)
      fail(field + " is '" + theirs + "' (model.mlp_activation " + ours_in_hf +
           "), but model.mlp_activation is " + model.mlp_activation);
  }
  void layer_norm_eps(const std::string& field) const {
    const double eps = number(field, 1e-5);
    if (std::fabs(eps - 1e-5) > 1e-12)
      fail(field + " is " + number_text(eps) + "; this project's LayerNorms use 1e-05");
  }
  void positions_cover(const std::string& field, int64_t rows,
                       const config::ModelConfig& model) const {
    if (rows < model.seq_len)
      fail(field + " is " + integer_text(rows) + ", fewer than model.seq_len " +
           integer_text(model.seq_len));
  }

 private:
  const JsonValue& json_;
  std::string path_, prefix_;
};

HfConfigFacts check_neox(const FieldChecker& c, const config::ModelConfig& m) {
  if (m.position != "rotary")
    c.fail("model_type gpt_neox has rotary positions, but model.position is " + m.position);
  c.same("hidden_size", c.integer("hidden_size", 6144), "model.hidden", m.hidden);
  c.same("num_attention_heads", c.integer("num_attention_heads", 64), "model.heads", m.heads);
  c.same("num_hidden_layers", c.integer("num_hidden_layers", 44), "model.layers", m.layers);
  c.same("vocab_size", c.integer("vocab_size", 50432), "model.vocab_size", m.vocab_size);
  c.same("intermediate_size", c.integer("intermediate_size", 24576),
         "model.mlp_ratio x model.hidden", m.mlp_ratio * m.hidden);
  // The rotary settings have three spellings. transformers 5 writes
  // rope_parameters {rope_type, rope_theta, partial_rotary_factor} and reads
  // them from there first, then from the original rotary_pct and
  // rotary_emb_base; some 4.x releases wrote partial_rotary_factor and
  // rope_theta at the top level. Read in that order, the field found named.
  std::string pct_field = c.find("rotary_pct") ? "rotary_pct" : "partial_rotary_factor";
  std::string base_field = c.find("rotary_emb_base") ? "rotary_emb_base" : "rope_theta";
  double pct = c.number(pct_field, 0.25), base = c.number(base_field, 10000);
  if (const JsonValue* rope = c.find("rope_parameters"); rope && !rope->is_null()) {
    if (rope->kind() != JsonValue::Kind::kObject)
      c.fail(std::string("rope_parameters is ") + JsonValue::kind_name(rope->kind()) +
             ", expected an object");
    const FieldChecker nested(*rope, c.path(), "rope_parameters.");
    const std::string type = nested.string("rope_type", nested.string("type", "default"));
    if (type != "default")
      c.fail("rope_parameters.rope_type is '" + type +
             "'; this project implements unscaled rotary embeddings only (default)");
    if (nested.find("partial_rotary_factor")) {
      pct_field = "rope_parameters.partial_rotary_factor";
      pct = nested.number("partial_rotary_factor", pct);
    }
    if (nested.find("rope_theta")) {
      base_field = "rope_parameters.rope_theta";
      base = nested.number("rope_theta", base);
    }
  }
  c.same_real(pct_field, pct, "model.rotary_pct", m.rotary_pct);
  c.same_real(base_field, base, "model.rotary_base", m.rotary_base);
  if (const JsonValue* scaling = c.find("rope_scaling"); scaling && !scaling->is_null())
    c.fail("rope_scaling is set; this project implements unscaled rotary embeddings only");
  c.same_flag("use_parallel_residual", c.boolean("use_parallel_residual", true),
              "model.parallel_residual", m.parallel_residual);
  c.same_flag("tie_word_embeddings", c.boolean("tie_word_embeddings", false),
              "model.tie_embeddings", m.tie_embeddings);
  c.same_activation("hidden_act", c.string("hidden_act", "gelu"), m);
  c.layer_norm_eps("layer_norm_eps");
  if (!c.boolean("attention_bias", true))
    c.fail("attention_bias is false; this project's attention has biases");
  c.positions_cover("max_position_embeddings", c.integer("max_position_embeddings", 2048), m);
  return {HfArchitecture::kGptNeoX, 0};
}

HfConfigFacts check_gpt2(const FieldChecker& c, const config::ModelConfig& m) {
  if (m.position != "learned")
    c.fail("model_type gpt2 has a learned position table, but model.position is " + m.position);
  if (m.parallel_residual)
    c.fail("model_type gpt2 has sequential residual blocks, but model.parallel_residual is true");
  const int64_t hidden = c.integer("n_embd", 768);
  c.same("n_embd", hidden, "model.hidden", m.hidden);
  c.same("n_head", c.integer("n_head", 12), "model.heads", m.heads);
  c.same("n_layer", c.integer("n_layer", 12), "model.layers", m.layers);
  c.same("vocab_size", c.integer("vocab_size", 50257), "model.vocab_size", m.vocab_size);
  c.same("n_inner", c.integer("n_inner", 4 * hidden), "model.mlp_ratio x model.hidden",
         m.mlp_ratio * m.hidden);
  c.same_activation("activation_function", c.string("activation_function", "gelu_new"), m);
  c.layer_norm_eps("layer_norm_epsilon");
  c.same_flag("tie_word_embeddings", c.boolean("tie_word_embeddings", true), "model.tie_embeddings",
              m.tie_embeddings);
  if (!c.boolean("scale_attn_weights", true))
    c.fail("scale_attn_weights is false; this project scales attention by 1/sqrt(head_dim)");
  if (c.boolean("scale_attn_by_inverse_layer_idx", false))
    c.fail("scale_attn_by_inverse_layer_idx is true; this project does not scale by layer");
  const int64_t rows = c.integer("n_positions", 1024);
  c.positions_cover("n_positions", rows, m);
  return {HfArchitecture::kGpt2, rows};
}

// The Llama switches GPT-NeoX and GPT-2 cannot express.
void refuse_llama_switches(const config::ModelConfig& m, const char* architecture) {
  const auto refuse = [architecture](const std::string& what) {
    throw std::invalid_argument(what + ": Hugging Face's " + architecture +
                                " cannot express it (model.norm rmsnorm makes a Llama)");
  };
  if (m.mlp_activation == "swiglu") refuse("model.mlp_activation swiglu");
  if (m.kv_heads > 0 && m.kv_heads != m.heads) refuse("model.kv_heads");
  if (!m.bias) refuse("model.bias false");
  if (m.intermediate_size > 0 && m.intermediate_size != m.mlp_ratio * m.hidden)
    refuse("model.intermediate_size");
  if (m.rope_scaling_factor > 0) refuse("model.rope_scaling_factor");
  if (std::fabs(m.norm_eps - 1e-5) > 1e-12) refuse("model.norm_eps other than 1e-05");
}

// What a Llama needs beyond RMSNorm.
void require_llama_switches(const config::ModelConfig& m) {
  const auto refuse = [](const std::string& what) {
    throw std::invalid_argument(what +
                                ": Hugging Face's Llama (model.norm rmsnorm) needs "
                                "model.mlp_activation swiglu, model.bias false, model.position "
                                "rotary with model.rotary_pct 1 and sequential blocks");
  };
  if (m.mlp_activation != "swiglu") refuse("model.mlp_activation " + m.mlp_activation);
  if (m.bias) refuse("model.bias true");
  if (m.position != "rotary") refuse("model.position " + m.position);
  if (m.rotary_pct != 1.0) refuse("model.rotary_pct " + number_text(m.rotary_pct));
  if (m.parallel_residual) refuse("model.parallel_residual true");
}

int64_t llama_intermediate(const config::ModelConfig& m) {
  return m.intermediate_size > 0 ? m.intermediate_size : m.mlp_ratio * m.hidden;
}

int64_t llama_kv_heads(const config::ModelConfig& m) {
  return m.kv_heads > 0 ? m.kv_heads : m.heads;
}

HfConfigFacts check_llama(const FieldChecker& c, const config::ModelConfig& m) {
  try {
    require_llama_switches(m);
  } catch (const std::invalid_argument& e) {
    c.fail(std::string("model_type llama: ") + e.what());
  }
  c.same("hidden_size", c.integer("hidden_size", 4096), "model.hidden", m.hidden);
  c.same("num_attention_heads", c.integer("num_attention_heads", 32), "model.heads", m.heads);
  c.same("num_key_value_heads", c.integer("num_key_value_heads", m.heads), "model.kv_heads",
         llama_kv_heads(m));
  c.same("num_hidden_layers", c.integer("num_hidden_layers", 32), "model.layers", m.layers);
  c.same("vocab_size", c.integer("vocab_size", 32000), "model.vocab_size", m.vocab_size);
  c.same("intermediate_size", c.integer("intermediate_size", 11008), "model.intermediate_size",
         llama_intermediate(m));
  if (const JsonValue* head_dim = c.find("head_dim"); head_dim && !head_dim->is_null())
    c.same("head_dim", c.integer("head_dim", 0), "model.hidden / model.heads", m.hidden / m.heads);
  const std::string act = c.string("hidden_act", "silu");
  if (act != "silu")
    c.fail("hidden_act is '" + act + "'; this project's gated MLP (swiglu) uses silu");
  c.same_real("rms_norm_eps", c.number("rms_norm_eps", 1e-6), "model.norm_eps", m.norm_eps);
  c.same_flag("tie_word_embeddings", c.boolean("tie_word_embeddings", false),
              "model.tie_embeddings", m.tie_embeddings);
  if (c.boolean("attention_bias", false)) c.fail("attention_bias is true; model.bias is false");
  if (c.boolean("mlp_bias", false)) c.fail("mlp_bias is true; model.bias is false");
  // rope_theta and rope_scaling at the top level (transformers 4), or both
  // in rope_parameters (transformers 5).
  std::string base_field = "rope_theta";
  double base = c.number("rope_theta", 10000);
  const JsonValue* scaling = c.find("rope_scaling");
  std::string scaling_prefix = "rope_scaling.";
  if (const JsonValue* rope = c.find("rope_parameters"); rope && !rope->is_null()) {
    if (rope->kind() != JsonValue::Kind::kObject)
      c.fail(std::string("rope_parameters is ") + JsonValue::kind_name(rope->kind()) +
             ", expected an object");
    const FieldChecker nested(*rope, c.path(), "rope_parameters.");
    if (nested.find("rope_theta")) {
      base_field = "rope_parameters.rope_theta";
      base = nested.number("rope_theta", base);
    }
    scaling = rope;
    scaling_prefix = "rope_parameters.";
  }
  c.same_real(base_field, base, "model.rotary_base", m.rotary_base);
  double factor = 0, low = 1, high = 4;
  int64_t original = 8192;
  if (scaling && !scaling->is_null()) {
    if (scaling->kind() != JsonValue::Kind::kObject) c.fail(scaling_prefix + " is not an object");
    const FieldChecker nested(*scaling, c.path(), scaling_prefix);
    const std::string type = nested.string("rope_type", nested.string("type", "default"));
    if (type == "llama3") {
      factor = nested.number("factor", 8);
      low = nested.number("low_freq_factor", 1);
      high = nested.number("high_freq_factor", 4);
      original = nested.integer("original_max_position_embeddings", 8192);
    } else if (type != "default") {
      c.fail(scaling_prefix + "rope_type is '" + type +
             "'; this project implements default and llama3 rotary scaling");
    }
  }
  c.same_real(scaling_prefix + "factor", factor, "model.rope_scaling_factor",
              m.rope_scaling_factor);
  if (factor > 0) {
    c.same_real(scaling_prefix + "low_freq_factor", low, "model.rope_low_freq_factor",
                m.rope_low_freq_factor);
    c.same_real(scaling_prefix + "high_freq_factor", high, "model.rope_high_freq_factor",
                m.rope_high_freq_factor);
    c.same(scaling_prefix + "original_max_position_embeddings", original,
           "model.rope_original_max_positions", m.rope_original_max_positions);
  }
  c.positions_cover("max_position_embeddings", c.integer("max_position_embeddings", 2048), m);
  return {HfArchitecture::kLlama, 0};
}

}  // namespace

HfArchitecture hf_architecture(const config::ModelConfig& model) {
  if (model.kind != config::ModelFamily::kGpt)
    throw std::invalid_argument(std::string("model.kind ") + config::name_of(model.kind) +
                                ": Hugging Face export and import cover GPT models (GPT-NeoX, "
                                "GPT-2, Llama)");
  if (model.norm == config::Normalization::kRmsNorm) {
    require_llama_switches(model);
    return HfArchitecture::kLlama;
  }
  if (model.position == "rotary") {
    refuse_llama_switches(model, "GPT-NeoX");
    return HfArchitecture::kGptNeoX;
  }
  refuse_llama_switches(model, "GPT-2");
  const std::string neither =
      " (Hugging Face's GPT-2 ties its output head and runs sequential blocks; its GPT-NeoX "
      "has rotary positions, no position table): no Hugging Face config expresses this model";
  if (!model.tie_embeddings)
    throw std::invalid_argument("model.tie_embeddings false with model.position learned" + neither);
  if (model.parallel_residual)
    throw std::invalid_argument("model.parallel_residual true with model.position learned" +
                                neither);
  return HfArchitecture::kGpt2;
}

std::string hf_generation_config_json(const HfTokenIds* ids) {
  JsonObjectText out;
  if (ids) {
    out.raw("bos_token_id", integer_text(ids->bos))
        .raw("eos_token_id", integer_text(ids->eos))
        .raw("pad_token_id", integer_text(ids->eos));
  }
  return out.flag("_from_model_config", true).done();
}

std::string hf_config_json(const config::ModelConfig& m, const HfTokenIds* ids) {
  JsonObjectText out;
  if (ids)
    out.raw("bos_token_id", integer_text(ids->bos)).raw("eos_token_id", integer_text(ids->eos));
  const HfArchitecture architecture = hf_architecture(m);
  if (architecture == HfArchitecture::kLlama) {
    out.raw("architectures", "[\"LlamaForCausalLM\"]")
        .str("model_type", "llama")
        .raw("vocab_size", integer_text(m.vocab_size))
        .raw("hidden_size", integer_text(m.hidden))
        .raw("intermediate_size", integer_text(llama_intermediate(m)))
        .raw("num_hidden_layers", integer_text(m.layers))
        .raw("num_attention_heads", integer_text(m.heads))
        .raw("num_key_value_heads", integer_text(llama_kv_heads(m)))
        .raw("head_dim", integer_text(m.hidden / m.heads))
        .str("hidden_act", "silu")
        .raw("max_position_embeddings", integer_text(m.seq_len))
        .raw("rms_norm_eps", number_text(m.norm_eps))
        .raw("rope_theta", number_text(m.rotary_base));
    if (m.rope_scaling_factor > 0)
      out.raw("rope_scaling",
              "{\"rope_type\": \"llama3\", \"factor\": " + number_text(m.rope_scaling_factor) +
                  ", \"low_freq_factor\": " + number_text(m.rope_low_freq_factor) +
                  ", \"high_freq_factor\": " + number_text(m.rope_high_freq_factor) +
                  ", \"original_max_position_embeddings\": " +
                  integer_text(m.rope_original_max_positions) + "}");
    else
      out.raw("rope_scaling", "null");
    out.flag("attention_bias", false)
        .flag("mlp_bias", false)
        .flag("tie_word_embeddings", m.tie_embeddings)
        .raw("initializer_range", number_text(m.init_std))
        .raw("attention_dropout", number_text(m.dropout));
  } else if (architecture == HfArchitecture::kGptNeoX) {
    out.raw("architectures", "[\"GPTNeoXForCausalLM\"]")
        .str("model_type", "gpt_neox")
        .raw("vocab_size", integer_text(m.vocab_size))
        .raw("hidden_size", integer_text(m.hidden))
        .raw("num_hidden_layers", integer_text(m.layers))
        .raw("num_attention_heads", integer_text(m.heads))
        .raw("intermediate_size", integer_text(m.mlp_ratio * m.hidden))
        .str("hidden_act", hf_activation(m))
        .raw("rotary_pct", number_text(m.rotary_pct))
        .raw("partial_rotary_factor", number_text(m.rotary_pct))
        .raw("rotary_emb_base", number_text(m.rotary_base))
        .raw("rope_theta", number_text(m.rotary_base))
        .raw("max_position_embeddings", integer_text(m.seq_len))
        .flag("use_parallel_residual", m.parallel_residual)
        .flag("tie_word_embeddings", m.tie_embeddings)
        .flag("attention_bias", true)
        .raw("layer_norm_eps", "1e-05")
        .raw("initializer_range", number_text(m.init_std))
        .raw("attention_dropout", number_text(m.dropout))
        .raw("hidden_dropout", number_text(m.dropout));
  } else {
    out.raw("architectures", "[\"GPT2LMHeadModel\"]")
        .str("model_type", "gpt2")
        .raw("vocab_size", integer_text(m.vocab_size))
        .raw("n_embd", integer_text(m.hidden))
        .raw("n_layer", integer_text(m.layers))
        .raw("n_head", integer_text(m.heads))
        .raw("n_inner", integer_text(m.mlp_ratio * m.hidden))
        .raw("n_positions", integer_text(m.seq_len))
        .str("activation_function", hf_activation(m))
        .raw("layer_norm_epsilon", "1e-05")
        .flag("tie_word_embeddings", true)
        .flag("scale_attn_weights", true)
        .flag("scale_attn_by_inverse_layer_idx", false)
        .flag("reorder_and_upcast_attn", false)
        .raw("initializer_range", number_text(m.init_std))
        .raw("resid_pdrop", number_text(m.dropout))
        .raw("embd_pdrop", number_text(m.dropout))
        .raw("attn_pdrop", number_text(m.dropout));
  }
  return out.str("torch_dtype", "float32").flag("use_cache", true).done();
}

HfConfigFacts check_hf_config(const JsonValue& json, const config::ModelConfig& model,
                              const std::string& path) {
  const FieldChecker checker(json, path);
  if (json.kind() != JsonValue::Kind::kObject) checker.fail("not a JSON object");
  if (model.kind != config::ModelFamily::kGpt)
    checker.fail(std::string("model.kind is ") + config::name_of(model.kind) +
                 "; Hugging Face weights initialise GPT models");
  const std::string type = checker.string("model_type", "");
  if ((type == "gpt_neox" || type == "gpt2") && model.norm == config::Normalization::kRmsNorm)
    checker.fail("model_type " + type + " has LayerNorms, but model.norm is rmsnorm");
  if (type == "gpt_neox" || type == "gpt2") {
    try {
      refuse_llama_switches(model, type == "gpt2" ? "GPT-2" : "GPT-NeoX");
    } catch (const std::invalid_argument& e) {
      checker.fail("model_type " + type + ": " + e.what());
    }
  }
  if (type == "gpt_neox") return check_neox(checker, model);
  if (type == "gpt2") return check_gpt2(checker, model);
  if (type == "llama") return check_llama(checker, model);
  checker.fail("model_type '" + type + "' is not supported (gpt_neox, gpt2 or llama)");
}

}  // namespace cmpi::hf
