// The translator runs in two passes per file: every key is looked up in the
// table (unknown: an error; no meaning here: kept for the one warning) and
// merged into the NeoX settings seen so far; then the table's plain copies
// and the groups of keys that convert together write this project's keys
// for the keys this file touched.
#include "config/neox_config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <optional>
#include <vector>

#include "config/neox_keys.h"
#include "config/units.h"

namespace cmpi::config {
namespace {

using Setting = NeoxTranslator::Setting;

const char* const kSections[] = {"run",  "model",       "parallel",   "training", "data",
                                 "eval", "compression", "checkpoint", "log"};

bool is_section(const std::string& key) {
  return std::find(std::begin(kSections), std::end(kSections), key) != std::end(kSections);
}

std::string line_of(const std::string& source, const YAML::Node& node) {
  return node.Mark().line >= 0 ? source + ":" + std::to_string(node.Mark().line + 1) : source;
}

std::string lower(std::string text) {
  for (char& c : text) c = char(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string shown(const YAML::Node& node) {
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "nothing";
}

// The project-key tree of one file being built, and the NeoX settings it
// is built from.
class Builder {
 public:
  Builder(ConfigLayer& layer, const std::map<std::string, Setting>& merged,
          const std::set<std::string>& touched, std::map<std::string, std::string>& waiting)
      : layer_(layer), merged_(merged), touched_(touched), waiting_(waiting) {}

  bool touched(const std::string& name) const { return touched_.count(name) > 0; }
  const Setting* get(const std::string& name) const {
    const auto it = merged_.find(name);
    return it == merged_.end() ? nullptr : &it->second;
  }
  // The first of `names` this file touched (the place derived keys are
  // reported at).
  const Setting& trigger(std::initializer_list<const char*> names) const {
    for (const char* name : names)
      if (touched(name)) return *get(name);
    return *get(*names.begin());
  }

  [[noreturn]] static void fail(const Setting& s, const std::string& why) {
    throw ConfigError(s.where + ": " + s.name + ": " + why);
  }
  static const YAML::Node& scalar(const Setting& s, const std::string& expected) {
    if (!s.value.IsScalar()) fail(s, "expected " + expected + ", got " + shown(s.value));
    return s.value;
  }
  static int64_t integer(const Setting& s) {
    const auto value = parse_integer(scalar(s, "an integer").Scalar());
    if (!value) fail(s, "expected an integer, got " + shown(s.value));
    return *value;
  }
  static double real(const Setting& s) {
    const auto value = parse_real(scalar(s, "a number").Scalar());
    if (!value) fail(s, "expected a number, got " + shown(s.value));
    return *value;
  }
  static bool flag(const Setting& s) {
    const std::string text = lower(scalar(s, "true or false").Scalar());
    if (text == "true" || text == "yes" || text == "on") return true;
    if (text == "false" || text == "no" || text == "off") return false;
    fail(s, "expected true or false, got " + shown(s.value));
  }
  static std::string word(const Setting& s) { return scalar(s, "a word").Scalar(); }

  // Writes `target` ("model.layers") from the NeoX key `from` written at
  // `where`; two keys of one file setting the same target is an error.
  void set(const std::string& target, const YAML::Node& value, const std::string& from,
           const std::string& where) {
    const auto [it, fresh] = emitted_.emplace(target, from + " at " + where);
    if (!fresh && it->second != from + " at " + where)
      throw ConfigError(where + ": " + from + ": sets " + target + ", as does " + it->second +
                        "; give it once");
    const size_t dot = target.find('.');
    layer_.tree[target.substr(0, dot)][target.substr(dot + 1)] = value;
    layer_.written_at[target] = where + " (" + from + ")";
  }
  void set(const std::string& target, const YAML::Node& value, const Setting& from) {
    set(target, value, from.name, from.where);
  }
  void set_text(const std::string& target, const std::string& text, const Setting& from) {
    set(target, YAML::Node(text), from);
  }
  void set_real(const std::string& target, double value, const Setting& from) {
    set_text(target, format_real(value), from);
  }
  void wait(const std::string& group, const std::string& error) { waiting_[group] = error; }
  void done(const std::string& group) { waiting_.erase(group); }
  void warn(const std::string& what) { ignored_.push_back(what); }
  const std::vector<std::string>& ignored() const { return ignored_; }

 private:
  ConfigLayer& layer_;
  const std::map<std::string, Setting>& merged_;
  const std::set<std::string>& touched_;
  std::map<std::string, std::string>& waiting_;
  std::map<std::string, std::string> emitted_;
  std::vector<std::string> ignored_;
};

// The entries of a NeoX mapping value (optimizer, fp16, zero_optimization):
// each as a Setting named "optimizer.params.lr" at its own line.
std::vector<Setting> entries_of(const Setting& s, const std::string& source) {
  if (!s.value.IsMap()) Builder::fail(s, "expected a mapping, got " + shown(s.value));
  std::vector<Setting> out;
  for (auto it = s.value.begin(); it != s.value.end(); ++it)
    out.push_back({s.name + "." + it->first.Scalar(), it->second,
                   line_of(source, it->second.IsNull() ? it->first : it->second)});
  return out;
}

std::string key_of(const Setting& s) {
  return s.name.substr(s.name.rfind('.') + 1);
}

// ------------------------------------------------------------- the groups
// Each reads the merged settings and writes the project keys it makes; it
// runs when the file touched one of its inputs.

void position(Builder& b, const std::string&) {
  const Setting& s = *b.get("pos_emb");
  const std::string value = Builder::word(s);
  if (value != "rotary" && value != "learned")
    Builder::fail(s, "'" + value + "' has no equivalent here: model.position is rotary or learned");
  b.set_text("model.position", value, s);
}

void weight_tying(Builder& b, const std::string&) {
  const Setting& s = *b.get("no_weight_tying");
  b.set("model.tie_embeddings", YAML::Node(!Builder::flag(s)), s);
}

void normalization(Builder& b, const std::string&) {
  const Setting* norm = b.get("norm");
  std::string kind = "layernorm";
  if (norm) {
    kind = Builder::word(*norm);
    if (kind != "layernorm" && kind != "rmsnorm")
      Builder::fail(*norm, "'" + kind +
                               "' has no equivalent here: model.norm is layernorm or "
                               "rmsnorm");
    if (b.touched("norm")) b.set_text("model.norm", kind, *norm);
  }
  const Setting* eps = b.get(kind == "rmsnorm" ? "rms_norm_epsilon" : "layernorm_epsilon");
  if (eps) b.set("model.norm_eps", eps->value, *eps);
}

void dropout(Builder& b, const std::string&) {
  const Setting* hidden = b.get("hidden_dropout");
  const Setting* attention = b.get("attention_dropout");
  if (hidden && attention && Builder::real(*hidden) != Builder::real(*attention))
    Builder::fail(*attention,
                  "this project has one dropout rate (model.dropout) and "
                  "hidden-dropout is " +
                      hidden->value.Scalar() + "; give them the same value");
  const Setting& from = hidden ? *hidden : *attention;
  b.set("model.dropout", from.value, from);
}

void initialization(Builder& b, const std::string&) {
  const Setting* first = b.get("init_method");
  const Setting* output = b.get("output_layer_init_method");
  const std::string a = first ? Builder::word(*first) : "normal";
  const std::string o = output ? Builder::word(*output) : "scaled_normal";
  const Setting& at = b.trigger({"init_method", "output_layer_init_method"});
  if (a == "small_init" && o == "wang_init") return b.set_text("model.init", "neox", at);
  if (a == "normal" && o == "scaled_normal") return b.set_text("model.init", "gpt2", at);
  Builder::fail(at, "init_method " + a + " with output_layer_init_method " + o +
                        " has no equivalent here: model.init is neox (small_init, wang_init) "
                        "or gpt2 (normal, scaled_normal)");
}

void activation(Builder& b, const std::string&) {
  const Setting* act = b.get("activation");
  const Setting* fusion = b.get("bias_gelu_fusion");
  const std::string name = act ? Builder::word(*act) : "gelu";
  if (name != "gelu")
    Builder::fail(*act, "'" + name +
                            "' has no equivalent here: the GPT's MLP is gelu "
                            "(model.mlp_activation gelu or gelu_tanh) or Llama's "
                            "swiglu (set model.mlp_activation in a project-key file)");
  const bool fused = fusion && Builder::flag(*fusion);
  b.set_text("model.mlp_activation", fused ? "gelu_tanh" : "gelu",
             b.trigger({"activation", "bias_gelu_fusion"}));
}

void max_positions(Builder& b, const std::string&) {
  const Setting* limit = b.get("max_position_embeddings");
  const Setting* seq = b.get("seq_length");
  if (limit && seq && Builder::integer(*limit) < Builder::integer(*seq))
    Builder::fail(*limit, "is below seq-length (" + seq->value.Scalar() + ")");
}

// attention-config: [[["global"], 44]] (a list of [types, layer count]);
// "all" stands for every layer.
void attention_types(Builder& b, const std::string& source) {
  const Setting& s = *b.get("attention_config");
  const std::string expected = "a list of [[types], layers] pairs, e.g. [[[\"global\"], 44]]";
  if (!s.value.IsSequence()) Builder::fail(s, "expected " + expected + ", got " + shown(s.value));
  for (const YAML::Node& pair : s.value) {
    if (!pair.IsSequence() || pair.size() != 2 || !pair[0].IsSequence())
      Builder::fail(s, "expected " + expected);
    for (const YAML::Node& type : pair[0]) {
      const std::string name = type.IsScalar() ? type.Scalar() : "";
      if (name != "global" && name != "flash")
        Builder::fail({s.name, s.value, line_of(source, type)},
                      "'" + name +
                          "' attention has no equivalent here: every layer attends "
                          "globally (global, or flash: the same attention)");
    }
  }
}

void pipeline(Builder& b, const std::string&) {
  const Setting& s = *b.get("pipe_parallel_size");
  const int64_t stages = Builder::integer(s);
  if (stages < 0) Builder::fail(s, "expected an integer >= 0, got " + shown(s.value));
  b.set_text("parallel.pipeline", std::to_string(std::max<int64_t>(stages, 1)), s);
}

void partition_method(Builder& b, const std::string&) {
  const Setting& s = *b.get("pipe_partition_method");
  if (lower(Builder::word(s)) != "type:transformer")
    Builder::fail(s, "'" + s.value.Scalar() +
                         "' has no equivalent here: parallel.pipeline_balance is uniform "
                         "(type:transformer), auto or a list of layers per stage");
  b.set_text("parallel.pipeline_balance", "uniform", s);
}

void zero(Builder& b, const std::string& source) {
  for (const Setting& entry : entries_of(*b.get("zero_optimization"), source)) {
    if (key_of(entry) == "stage")
      b.set("parallel.zero_stage", entry.value, entry);
    else
      b.warn(entry.name);
  }
}

void batch(Builder& b, const std::string&) {
  const Setting* global = b.get("train_batch_size");
  const Setting* micro = b.get("train_micro_batch_size_per_gpu");
  const Setting* steps = b.get("gradient_accumulation_steps");
  if (!global) {
    if (steps)
      b.wait("batch", steps->where + ": " + steps->name + ": " + steps->value.Scalar() +
                          " accumulation steps make the global batch micro batch x " +
                          steps->value.Scalar() +
                          " x dp, and NeoX takes dp from the world size, which a config here "
                          "does not know: add train_batch_size (the sequences per step; for "
                          "GPT-NeoX-20B's 96 GPUs, 4 x 32 x 12 = 1536)");
    return;
  }
  b.done("batch");
  b.set("training.global_batch", global->value, *global);
  if (!micro || !steps) return;
  const int64_t per_replica = Builder::integer(*micro) * Builder::integer(*steps);
  const int64_t total = Builder::integer(*global);
  if (per_replica <= 0 || total % per_replica != 0)
    Builder::fail(*global, std::to_string(total) +
                               " is not train_micro_batch_size_per_gpu x "
                               "gradient_accumulation_steps (" +
                               std::to_string(per_replica) + ") times a whole dp");
  b.set_text("parallel.data", std::to_string(total / per_replica), *global);
}

void optimizer(Builder& b, const std::string& source) {
  for (const Setting& entry : entries_of(*b.get("optimizer"), source)) {
    const std::string key = key_of(entry);
    if (key == "type") {
      const std::string type = lower(Builder::word(entry));
      if (type != "adam" && type != "adamw" && type != "cpu_adam" && type != "cpu_torch_adam")
        Builder::fail(entry, "'" + entry.value.Scalar() +
                                 "' has no equivalent here: the optimizer is AdamW (Adam, AdamW, "
                                 "cpu_adam and cpu_torch_adam read as it)");
    } else if (key == "params") {
      for (const Setting& param : entries_of(entry, source)) {
        const std::string name = key_of(param);
        if (name == "lr") {
          b.set("training.lr", param.value, param);
        } else if (name == "eps") {
          b.set("training.eps", param.value, param);
        } else if (name == "weight_decay") {
          b.set("training.weight_decay", param.value, param);
        } else if (name == "betas") {
          if (!param.value.IsSequence() || param.value.size() != 2)
            Builder::fail(param, "expected [beta1, beta2], got " + shown(param.value));
          b.set("training.beta1", param.value[0], param);
          b.set("training.beta2", param.value[1], param);
        } else {
          Builder::fail(param,
                        "not a parameter of this project's AdamW (lr, betas, eps, "
                        "weight_decay)");
        }
      }
    } else {
      Builder::fail(entry, "expected type or params");
    }
  }
}

void precision(Builder& b, const std::string& source) {
  std::string chosen;  // the precision the settings ask for, "" if none
  // A copy: the entries of fp16 and bf16 live only while they are read.
  std::optional<Setting> from;
  const auto choose = [&](const std::string& value, const Setting& s) {
    if (!chosen.empty() && chosen != value)
      Builder::fail(s, "asks for " + value + " where " + from->name + " asks for " + chosen);
    chosen = value;
    from = s;
  };
  if (const Setting* s = b.get("precision")) {
    const std::string value = Builder::word(*s);
    if (value != "fp32" && value != "fp16" && value != "bfloat16")
      Builder::fail(*s, "expected fp32, fp16 or bfloat16, got " + shown(s->value));
    choose(value == "bfloat16" ? "bf16" : value, *s);
  }
  if (const Setting* s = b.get("bf16"))
    for (const Setting& entry : entries_of(*s, source)) {
      if (key_of(entry) != "enabled") Builder::fail(entry, "expected enabled");
      if (Builder::flag(entry)) choose("bf16", entry);
    }
  if (const Setting* s = b.get("fp16"))
    for (const Setting& entry : entries_of(*s, source)) {
      const std::string key = key_of(entry);
      if (key == "enabled" || key == "fp16") {
        if (Builder::flag(entry)) choose("fp16", entry);
      } else if (key == "type") {
        if (Builder::word(entry) != "bfloat16")
          Builder::fail(entry, "expected bfloat16, got " + shown(entry.value));
        choose("bf16", entry);
      } else if (key == "loss_scale") {
        if (Builder::real(entry) != 0)
          Builder::fail(entry, entry.value.Scalar() +
                                   " (a fixed loss scale) has no equivalent here: the fp16 "
                                   "scale is dynamic; write 0");
      } else if (key == "initial_scale_power") {
        b.set_real("training.loss_scale_initial", std::ldexp(1.0, int(Builder::integer(entry))),
                   entry);
      } else if (key == "loss_scale_window") {
        b.set("training.loss_scale_growth_interval", entry.value, entry);
      } else if (key == "min_loss_scale") {
        b.set("training.loss_scale_min", entry.value, entry);
      } else if (key == "hysteresis" || key == "consecutive_hysteresis" || key == "auto_cast") {
        b.warn(entry.name);
      } else {
        Builder::fail(entry,
                      "not a key of DeepSpeed's fp16 section this project reads "
                      "(enabled, loss_scale, initial_scale_power, loss_scale_window, "
                      "min_loss_scale)");
      }
    }
  if (from)
    b.set_text("training.precision", chosen, *from);
  else if (b.touched("fp16") || b.touched("bf16"))  // every 16-bit switch off
    b.set_text("training.precision", "fp32", b.trigger({"fp16", "bf16"}));
}

void recompute(Builder& b, const std::string&) {
  if (const Setting* layers = b.get("checkpoint_num_layers");
      layers && Builder::integer(*layers) != 1)
    Builder::fail(*layers,
                  "has no equivalent here: checkpoint-activations recomputes each block "
                  "on its own (1); training.recompute_layers counts the blocks "
                  "recomputed instead");
  if (const Setting* s = b.get("checkpoint_activations"); s && b.touched("checkpoint_activations"))
    b.set_text("training.recompute", Builder::flag(*s) ? "full" : "none", *s);
}

void partition_activations(Builder& b, const std::string&) {
  const Setting& s = *b.get("partition_activations");
  if (Builder::flag(s))
    Builder::fail(s,
                  "true has no equivalent here (parallel.sequence_parallel splits the "
                  "activations between the tensor-parallel layers over tp)");
}

void decay_style(Builder& b, const std::string&) {
  const Setting& s = *b.get("lr_decay_style");
  if (Builder::word(s) != "cosine")
    Builder::fail(s, "'" + s.value.Scalar() +
                         "' has no equivalent here: the learning rate warms up linearly and "
                         "decays along a cosine to min_lr");
}

void decay_iters(Builder& b, const std::string&) {
  const Setting* decay = b.get("lr_decay_iters");
  const Setting* steps = b.get("train_iters");
  if (!decay) return;
  if (!steps) {
    b.wait("decay_iters", decay->where + ": " + decay->name +
                              ": needs train-iters, which no "
                              "GPT-NeoX file gives");
    return;
  }
  b.done("decay_iters");
  if (Builder::integer(*decay) != Builder::integer(*steps))
    Builder::fail(*decay, "is " + decay->value.Scalar() + " but train-iters is " +
                              steps->value.Scalar() +
                              ": the learning rate decays to min_lr at the last step here, so "
                              "they must be equal");
}

void warmup(Builder& b, const std::string&) {
  const Setting* fraction = b.get("warmup");
  const Setting* steps = b.get("train_iters");
  if (!fraction) return;
  if (!steps) {
    b.wait("warmup", fraction->where + ": " + fraction->name +
                         ": is a fraction of train-iters, which no GPT-NeoX file gives");
    return;
  }
  b.done("warmup");
  const double share = Builder::real(*fraction);
  if (!(share >= 0 && share <= 1))
    Builder::fail(*fraction,
                  "expected a fraction of train-iters in [0, 1], got " + shown(fraction->value));
  const double warm = std::round(share * double(Builder::integer(*steps)));
  b.set_text("training.warmup_steps", std::to_string(int64_t(warm)),
             b.trigger({"warmup", "train_iters"}));
}

void data_paths(Builder& b, const std::string&) {
  const Setting* one = b.get("data_path");
  const Setting* many = b.get("train_data_paths");
  if (one && many)
    Builder::fail(*many, "give the data once: data-path (one prefix) or train-data-paths");
  const Setting& s = one ? *one : *many;
  if (one) Builder::scalar(s, "a dataset prefix");
  b.set("data.paths", s.value, s);
  b.set_text("data.kind", "indexed", s);
}

void separate_splits(Builder& b, const std::string&) {
  const Setting& s = b.trigger({"valid_data_paths", "test_data_paths"});
  Builder::fail(s,
                "has no equivalent here: the valid documents are a share of the training "
                "datasets (split, data.split)");
}

void split(Builder& b, const std::string&) {
  const Setting& s = *b.get("split");
  const std::string text = Builder::word(s);
  std::vector<double> shares;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const auto share = parse_real(text.substr(start, comma - start));
    if (!share || !(*share >= 0))
      Builder::fail(s, "expected train,valid,test weights like 969,30,1, got " + shown(s.value));
    shares.push_back(*share);
    start = comma + 1;
  }
  if (shares.size() > 3) Builder::fail(s, "expected at most three weights: train,valid,test");
  shares.resize(3, 0.0);
  YAML::Node list(YAML::NodeType::Sequence);
  list.push_back(format_real(shares[0]));
  list.push_back(format_real(shares[1] + shares[2]));
  b.set("data.split", list, s);
}

void data_impl(Builder& b, const std::string&) {
  const Setting& s = *b.get("data_impl");
  if (Builder::word(s) != "mmap")
    Builder::fail(s, "'" + s.value.Scalar() +
                         "' has no equivalent here: datasets are read as "
                         "mmap .bin/.idx pairs");
}

void tokenizer(Builder& b, const std::string&) {
  const Setting* type = b.get("tokenizer_type");
  const Setting* file = b.get("vocab_file");
  if (type && Builder::word(*type) != "HFTokenizer")
    Builder::fail(*type, "'" + type->value.Scalar() +
                             "' is not read here: give a Hugging Face tokenizer.json as "
                             "vocab-file with tokenizer-type HFTokenizer (or data.tokenizer)");
  if (!type || !file) {
    const Setting& s = type ? *type : *file;
    b.wait("tokenizer",
           s.where + ": " + s.name + ": needs " +
               (type ? "vocab-file (the tokenizer.json)" : "tokenizer-type: HFTokenizer"));
    return;
  }
  b.done("tokenizer");
  b.set("data.tokenizer", file->value, b.trigger({"vocab_file", "tokenizer_type"}));
}

struct Group {
  std::vector<std::string> inputs;  // normalized NeoX keys
  void (*convert)(Builder&, const std::string& source);
};

const std::vector<Group>& groups() {
  static const std::vector<Group> all = {
      {{"pos_emb"}, position},
      {{"no_weight_tying"}, weight_tying},
      {{"norm", "layernorm_epsilon", "rms_norm_epsilon"}, normalization},
      {{"hidden_dropout", "attention_dropout"}, dropout},
      {{"init_method", "output_layer_init_method"}, initialization},
      {{"activation", "bias_gelu_fusion"}, activation},
      {{"max_position_embeddings", "seq_length"}, max_positions},
      {{"attention_config"}, attention_types},
      {{"pipe_parallel_size"}, pipeline},
      {{"pipe_partition_method"}, partition_method},
      {{"zero_optimization"}, zero},
      {{"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"},
       batch},
      {{"optimizer"}, optimizer},
      {{"fp16", "bf16", "precision"}, precision},
      {{"checkpoint_activations", "checkpoint_num_layers"}, recompute},
      {{"partition_activations"}, partition_activations},
      {{"lr_decay_style"}, decay_style},
      {{"lr_decay_iters", "train_iters"}, decay_iters},
      {{"warmup", "train_iters"}, warmup},
      {{"data_path", "train_data_paths"}, data_paths},
      {{"valid_data_paths", "test_data_paths"}, separate_splits},
      {{"split"}, split},
      {{"data_impl"}, data_impl},
      {{"tokenizer_type", "vocab_file"}, tokenizer},
  };
  return all;
}

}  // namespace

bool looks_like_neox(const YAML::Node& root) {
  if (!root.IsMap()) return false;
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (!it->first.IsScalar()) continue;
    const std::string& key = it->first.Scalar();
    if (is_section(key)) continue;
    if (key.find('-') != std::string::npos || find_neox_key(key)) return true;
  }
  return false;
}

ConfigLayer NeoxTranslator::translate(const YAML::Node& root, const std::string& source) {
  ConfigLayer layer;
  layer.source = source;
  layer.tree = YAML::Node(YAML::NodeType::Map);
  std::set<std::string> touched;
  std::vector<std::string> ignored;
  size_t mapped = 0;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string name = it->first.Scalar();
    const std::string where = line_of(source, it->first);
    if (is_section(name))
      throw ConfigError(where + ": " + name +
                        ": a section of this project's keys in a GPT-NeoX config; write them "
                        "in a file of their own and give both (--config neox.yml --config "
                        "mine.yaml)");
    const NeoxKey* entry = find_neox_key(name);
    if (!entry) {
      std::vector<std::string> known;
      for (const NeoxKey& key : neox_keys()) known.push_back(key.name);
      std::string why = "not a GPT-NeoX key this project reads or knows to ignore";
      const auto guess = closest_word(name, known);
      if (guess) why += " (did you mean " + *guess + "?)";
      throw ConfigError(where + ": " + name + ": " + why +
                        "; docs/config.md lists the keys read from GPT-NeoX configs");
    }
    if (entry->use == NeoxUse::kIgnore) {
      ignored.push_back(name);
      continue;
    }
    // NeoX reads a null as "not set": its default, which here is this
    // project's.
    if (it->second.IsNull()) continue;
    const std::string key = neox_normalized(entry->name);
    if (touched.count(key))
      throw ConfigError(where + ": " + name + ": written twice (as " + merged_[key].name + " at " +
                        merged_[key].where + "); NeoX reads - and _ alike");
    merged_[key] = {name, it->second, line_of(source, it->second)};
    touched.insert(key);
    ++mapped;
  }
  Builder builder(layer, merged_, touched, waiting_);
  for (const NeoxKey& entry : neox_keys()) {
    const std::string key = neox_normalized(entry.name);
    if (entry.use == NeoxUse::kCopy && touched.count(key))
      builder.set(entry.target, merged_[key].value, merged_[key]);
  }
  for (const Group& group : groups())
    if (std::any_of(group.inputs.begin(), group.inputs.end(),
                    [&](const std::string& input) { return touched.count(input) > 0; }))
      group.convert(builder, source);
  ignored.insert(ignored.end(), builder.ignored().begin(), builder.ignored().end());
  layer.notes.push_back(source + ": read as a GPT-NeoX config (" + std::to_string(mapped) +
                        " keys through the mapping table of docs/config.md)");
  if (!ignored.empty())
    layer.warnings.push_back(source + ": GPT-NeoX keys with no meaning here, ignored: " +
                             join_words(ignored) + " (docs/config.md says why each)");
  return layer;
}

void NeoxTranslator::finish() const {
  if (!waiting_.empty()) throw ConfigError(waiting_.begin()->second);
}

}  // namespace cmpi::config
