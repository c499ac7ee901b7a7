#include "hf/hf_config_reader.h"

#include <cmath>
#include <optional>
#include <stdexcept>
#include <utility>

#include "hf/hf_model_config.h"

namespace cmpi::hf {
namespace {

using data::JsonValue;

// The fields of one JSON object with defaults for absent or null ones.
class Fields {
 public:
  Fields(const JsonValue& json, const std::string& path, std::string prefix = "")
      : json_(json), path_(path), prefix_(std::move(prefix)) {}
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(path_ + ": " + prefix_ + what);
  }
  const JsonValue* object(const std::string& field) const {
    const JsonValue* v = json_.find(field);
    if (!v || v->is_null()) return nullptr;
    if (v->kind() != JsonValue::Kind::kObject) fail(field + " is not an object");
    return v;
  }
  bool has(const std::string& field) const {
    const JsonValue* v = json_.find(field);
    return v && !v->is_null();
  }
  double number(const std::string& field, double fallback) const {
    const JsonValue* v = json_.find(field);
    if (!v || v->is_null()) return fallback;
    if (v->kind() != JsonValue::Kind::kNumber) fail(field + " is not a number");
    return v->number();
  }
  int64_t integer(const std::string& field, int64_t fallback) const {
    if (!has(field)) return fallback;
    number(field, 0);  // refuses a value that is no number
    const std::optional<int64_t> value = json_.find(field)->exact_integer();
    if (!value || *value < 0) fail(field + " is not a whole number of at most 2^53");
    return *value;
  }
  bool boolean(const std::string& field, bool fallback) const {
    const JsonValue* v = json_.find(field);
    if (!v || v->is_null()) return fallback;
    if (v->kind() != JsonValue::Kind::kBool) fail(field + " is not true or false");
    return v->boolean();
  }
  const std::string& path() const { return path_; }
  std::string string(const std::string& field, const std::string& fallback) const {
    const JsonValue* v = json_.find(field);
    if (!v || v->is_null()) return fallback;
    if (v->kind() != JsonValue::Kind::kString) fail(field + " is not a string");
    return v->text();
  }

 private:
  const JsonValue& json_;
  std::string path_, prefix_;
};

// GPT-NeoX and GPT-2 state the MLP width; this project states a ratio.
int64_t mlp_ratio(const Fields& f, const std::string& field, int64_t width, int64_t hidden) {
  if (hidden <= 0 || width % hidden != 0)
    f.fail(field + " (" + std::to_string(width) + ") is not a multiple of the hidden size (" +
           std::to_string(hidden) + "); model.mlp_ratio cannot express it");
  return width / hidden;
}

std::string activation(const Fields& f, const std::string& field, const std::string& hf_name) {
  if (hf_name == "gelu") return "gelu";
  if (hf_name == "gelu_new" || hf_name == "gelu_fast" || hf_name == "gelu_pytorch_tanh")
    return "gelu_tanh";
  f.fail(field + " '" + hf_name +
         "' is not supported (gelu, gelu_new, gelu_fast, "
         "gelu_pytorch_tanh)");
}

void read_neox(const Fields& f, config::ModelConfig& m) {
  m.position = "rotary";
  m.hidden = f.integer("hidden_size", 6144);
  m.heads = f.integer("num_attention_heads", 64);
  m.layers = f.integer("num_hidden_layers", 44);
  m.vocab_size = f.integer("vocab_size", 50432);
  m.mlp_ratio = mlp_ratio(f, "intermediate_size", f.integer("intermediate_size", 24576), m.hidden);
  m.rotary_pct = f.number(f.has("rotary_pct") ? "rotary_pct" : "partial_rotary_factor", 0.25);
  m.rotary_base = f.number(f.has("rotary_emb_base") ? "rotary_emb_base" : "rope_theta", 10000);
  if (const JsonValue* rope = f.object("rope_parameters")) {
    const Fields nested(*rope, f.path(), "rope_parameters.");
    m.rotary_pct = nested.number("partial_rotary_factor", m.rotary_pct);
    m.rotary_base = nested.number("rope_theta", m.rotary_base);
  }
  m.parallel_residual = f.boolean("use_parallel_residual", true);
  m.tie_embeddings = f.boolean("tie_word_embeddings", false);
  m.mlp_activation = activation(f, "hidden_act", f.string("hidden_act", "gelu"));
  m.seq_len = f.integer("max_position_embeddings", 2048);
}

void read_gpt2(const Fields& f, config::ModelConfig& m) {
  m.position = "learned";
  m.hidden = f.integer("n_embd", 768);
  m.heads = f.integer("n_head", 12);
  m.layers = f.integer("n_layer", 12);
  m.vocab_size = f.integer("vocab_size", 50257);
  m.mlp_ratio = mlp_ratio(f, "n_inner", f.integer("n_inner", 4 * m.hidden), m.hidden);
  m.mlp_activation =
      activation(f, "activation_function", f.string("activation_function", "gelu_new"));
  m.tie_embeddings = f.boolean("tie_word_embeddings", true);
  m.parallel_residual = false;
  m.seq_len = f.integer("n_positions", 1024);
}

void read_llama(const Fields& f, config::ModelConfig& m) {
  m.norm = config::Normalization::kRmsNorm;
  m.mlp_activation = "swiglu";
  m.bias = false;
  m.position = "rotary";
  m.rotary_pct = 1.0;
  m.parallel_residual = false;
  m.hidden = f.integer("hidden_size", 4096);
  m.heads = f.integer("num_attention_heads", 32);
  m.kv_heads = f.integer("num_key_value_heads", m.heads);
  m.layers = f.integer("num_hidden_layers", 32);
  m.vocab_size = f.integer("vocab_size", 32000);
  m.intermediate_size = f.integer("intermediate_size", 11008);
  m.norm_eps = f.number("rms_norm_eps", 1e-6);
  m.tie_embeddings = f.boolean("tie_word_embeddings", false);
  m.rotary_base = f.number("rope_theta", 10000);
  const JsonValue* scaling = f.object("rope_scaling");
  std::string prefix = "rope_scaling.";
  if (const JsonValue* rope = f.object("rope_parameters")) {
    m.rotary_base = Fields(*rope, f.path(), "rope_parameters.").number("rope_theta", m.rotary_base);
    scaling = rope;
    prefix = "rope_parameters.";
  }
  if (scaling) {
    const Fields nested(*scaling, f.path(), prefix);
    if (nested.string("rope_type", nested.string("type", "default")) == "llama3") {
      m.rope_scaling_factor = nested.number("factor", 8);
      m.rope_low_freq_factor = nested.number("low_freq_factor", 1);
      m.rope_high_freq_factor = nested.number("high_freq_factor", 4);
      m.rope_original_max_positions = nested.integer("original_max_position_embeddings", 8192);
    }
  }
  m.seq_len = f.integer("max_position_embeddings", 2048);
}

}  // namespace

config::ModelConfig model_config_from_hf(const JsonValue& json, const std::string& path) {
  const Fields f(json, path);
  if (json.kind() != JsonValue::Kind::kObject) f.fail("not a JSON object");
  config::ModelConfig m;
  m.kind = config::ModelFamily::kGpt;
  m.dropout = 0.0;
  const std::string type = f.string("model_type", "");
  if (type == "gpt_neox")
    read_neox(f, m);
  else if (type == "gpt2")
    read_gpt2(f, m);
  else if (type == "llama")
    read_llama(f, m);
  else
    f.fail("model_type '" + type + "' is not supported (gpt_neox, gpt2 or llama)");
  // Every field this project computes with, checked as an import checks it
  // (a value it does not implement, such as another LayerNorm epsilon).
  check_hf_config(json, m, path);
  return m;
}

}  // namespace cmpi::hf
