// GPT-NeoX YAML configs read through the mapping table (config/neox_keys.h):
// the published GPT-NeoX-20B hyperparameters, written in NeoX's key names,
// resolve to configs/gpt20b.yaml's settings; a local_setup-style second file
// merges over them; unknown keys, values with no equivalent and keys with no
// meaning here are one message each; docs/config.md holds the table.
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "config/config_loader.h"
#include "config/neox_config.h"
#include "config/neox_keys.h"
#include "tests/config/config_test_support.h"

namespace cmpi::config {
namespace {

using namespace config_testing;

// GPT-NeoX-20B's published hyperparameters (Black et al. 2022; EleutherAI's
// configs/20B.yml) in NeoX's key names and its file's JSON-like style. One
// key is added: train_batch_size (4 x 32 x dp 12 = 1536 on the 96 GPUs the
// file was written for), since a NeoX file leaves the global batch to the
// world size and a config here states it. The tokenizer file is left out:
// it is not in this repository and the checks open it.
const char* const kNeox20B = R"({
  # parallelism settings
  "pipe-parallel-size": 4,
  "model-parallel-size": 2,

  # model settings
  "num-layers": 44,
  "hidden-size": 6144,
  "num-attention-heads": 64,
  "seq-length": 2048,
  "max-position-embeddings": 2048,
  "norm": "layernorm",
  "pos-emb": "rotary",
  "rotary_pct": 0.25,
  "no-weight-tying": true,
  "gpt_j_residual": true,
  "output_layer_parallelism": "column",
  "scaled-upper-triang-masked-softmax-fusion": true,
  "bias-gelu-fusion": true,

  # init methods
  "init_method": "small_init",
  "output_layer_init_method": "wang_init",

  # optimizer settings
  "optimizer": {
    "type": "Adam",
    "params": {
      "lr": 0.97e-4,
      "betas": [0.9, 0.95],
      "eps": 1.0e-8,
      }
      },

  "min_lr": 0.97e-5,

  "zero_optimization": {
  "stage": 1,
  "allgather_partitions": True,
  "allgather_bucket_size": 1260000000,
  "overlap_comm": True,
  "reduce_scatter": True,
  "reduce_bucket_size": 1260000000,
  "contiguous_gradients": True,
  },

  # batch / data settings (assuming 96 GPUs)
  "train_micro_batch_size_per_gpu": 4,
  "gradient_accumulation_steps": 32,
  "train_batch_size": 1536,
  "data-impl": "mmap",
  "split": "995,4,1",

  # activation checkpointing
  "checkpoint-activations": true,
  "checkpoint-num-layers": 1,
  "partition-activations": false,
  "synchronize-each-layer": true,

  # regularization
  "gradient_clipping": 1.0,
  "weight-decay": 0.01,
  "hidden-dropout": 0,
  "attention-dropout": 0,

  # precision settings
  "fp16": {
    "fp16": true,
    "enabled": true,
    "loss_scale": 0,
    "loss_scale_window": 1000,
    "initial_scale_power": 12,
    "hysteresis": 2,
    "min_loss_scale": 1
    },

  # misc. training settings
  "train-iters": 150000,
  "lr-decay-iters": 150000,

  "distributed-backend": "nccl",
  "lr-decay-style": "cosine",
  "warmup": 0.01,
  "checkpoint-factor": 500,
  "eval-interval": 1000,
  "eval-iters": 10,

  # logging
  "log-interval": 2,
  "steps_per_print": 2,
  "wall_clock_breakdown": false,

  "save": "./20B_checkpoints",
  "load": "./20B_checkpoints",
  "data-path": "./data/pile_00_text_document",
  "tensorboard-dir": "./tensorboard",
  "log-dir": "./logs",
}
)";

// The keys (section.key) where the 20B NeoX file and configs/gpt20b.yaml
// differ on purpose, and why.
const std::map<std::string, std::string> kDeliberate = {
    {"run.name", "NeoX names no run; gpt20b.yaml names it gpt20b"},
    {"model.vocab_size",
     "NeoX takes the vocabulary from the tokenizer file (50277 tokens padded to 50432), which "
     "is not in this repository; the NeoX file says no size"},
    {"parallel.data",
     "NeoX's 96-GPU layout is dp 12 x tp 2 x pp 4 (from train_batch_size); "
     "gpt20b.yaml plans 96 ranks as tp 4 x pp 6 with dp auto (its header "
     "says so)"},
    {"parallel.tensor", "as parallel.data"},
    {"parallel.pipeline", "as parallel.data"},
    {"parallel.dp_bucket_bytes",
     "DeepSpeed's reduce_bucket_size counts elements for its own reducer and is ignored; "
     "gpt20b.yaml writes 25MB, the default here is 25MiB"},
    {"data.paths", "each file names its own local dataset prefix"},
    {"data.split",
     "NeoX's split 995,4,1 (the test share joins valid); gpt20b.yaml keeps the "
     "default 0.98, 0.02"},
    {"eval.every", "the NeoX file evaluates every 1000 steps; gpt20b.yaml does not evaluate"},
    {"eval.batches", "as eval.every (eval-iters 10)"},
    {"checkpoint.dir", "NeoX's save directory; gpt20b.yaml keeps the run directory's"},
};

// Every leaf of a resolved config (to_yaml's text) as "section.key" -> value.
std::map<std::string, std::string> leaves(const std::string& yaml) {
  std::map<std::string, std::string> out;
  const YAML::Node root = YAML::Load(yaml);
  for (auto section = root.begin(); section != root.end(); ++section)
    for (auto key = section->second.begin(); key != section->second.end(); ++key) {
      YAML::Emitter text;
      text << YAML::Flow << key->second;
      out[section->first.Scalar() + "." + key->first.Scalar()] = text.c_str();
    }
  return out;
}

TEST_F(ConfigTest, NeoX20BResolvesToTheSettingsOfGpt20bYaml) {
  const std::string neox = write(kNeox20B, "20B.yml");
  const Config from_neox = load_checked_config(neox, {});
  const Config ours = load_checked_config("configs/gpt20b.yaml", {});
  const auto a = leaves(to_yaml(from_neox));
  const auto b = leaves(to_yaml(ours));
  ASSERT_EQ(a.size(), b.size());
  size_t compared = 0;
  for (const auto& [key, value] : b) {
    // The compression section is this project's alone: NeoX has none.
    if (key.rfind("compression.", 0) == 0) continue;
    const auto deliberate = kDeliberate.find(key);
    if (deliberate != kDeliberate.end()) {
      // Listed differences must still differ, so the list stays exact.
      EXPECT_NE(a.at(key), value) << key << " no longer differs: drop it from kDeliberate";
      continue;
    }
    EXPECT_EQ(a.at(key), value) << key;
    ++compared;
  }
  EXPECT_GE(compared, 40u);
  // The values NeoX expresses otherwise, converted.
  EXPECT_EQ(from_neox.training.warmup_steps, 1500);  // warmup 0.01 of 150000
  EXPECT_EQ(from_neox.training.global_batch, 1536);
  EXPECT_EQ(from_neox.parallel.data, 12);
  EXPECT_EQ(from_neox.training.loss_scale_initial, 4096);  // 2^12
  EXPECT_EQ(from_neox.model.mlp_activation, "gelu_tanh");
  EXPECT_FALSE(from_neox.model.tie_embeddings);
  EXPECT_EQ(from_neox.data.split, (std::vector<double>{995, 5}));
  // The file was said to be read as NeoX; the keys with no meaning here are
  // one warning that names them all.
  ASSERT_EQ(from_neox.notes.size(), 1u);
  EXPECT_CONTAINS(from_neox.notes[0], neox + ": read as a GPT-NeoX config");
  const auto warnings = config_warnings(from_neox);
  ASSERT_EQ(warnings.size(), 1u);
  for (const char* key :
       {"output_layer_parallelism", "scaled-upper-triang-masked-softmax-fusion",
        "synchronize-each-layer", "distributed-backend", "steps_per_print", "wall_clock_breakdown",
        "load", "tensorboard-dir", "log-dir", "zero_optimization.overlap_comm", "fp16.hysteresis"})
    EXPECT_CONTAINS(warnings[0], key);
}

TEST_F(ConfigTest, NeoXValuesAreReportedAtTheirNeoXKeyAndLine) {
  const std::string neox = write(kNeox20B, "20B.yml");
  const Config c = load_checked_config(neox, {});
  EXPECT_EQ(c.origins.at("model.layers"),
            neox + ":" + std::to_string(line_of(kNeox20B, "\"num-layers\"")) + " (num-layers)");
  // A key made from a NeoX mapping's entry (fp16: {enabled: true}).
  EXPECT_EQ(c.origins.at("training.precision"),
            neox + ":" + std::to_string(line_of(kNeox20B, "\"enabled\"")) + " (fp16.enabled)");
  EXPECT_EQ(c.origins.at("training.lr"),
            neox + ":" + std::to_string(line_of(kNeox20B, "\"lr\"")) + " (optimizer.params.lr)");
}

TEST_F(ConfigTest, LocalSetupFileMergesOverANeoXConfig) {
  const std::string neox = write(kNeox20B, "20B.yml");
  const std::string local = write(
      "# local_setup.yml\n"
      "{\n"
      "  \"data-path\": \"/data/enwik8/enwik8_text_document\",\n"
      "  \"save\": \"checkpoints\",\n"
      "  \"train-iters\": 320000,\n"
      "  \"lr-decay-iters\": 320000,\n"
      "  \"use_wandb\": False,\n"
      "}\n",
      "local_setup.yml");
  const Config c = load_checked_config(std::vector<std::string>{neox, local}, {});
  EXPECT_EQ(c.data.paths, std::vector<std::string>{"/data/enwik8/enwik8_text_document"});
  EXPECT_EQ(c.checkpoint.dir, "checkpoints");
  EXPECT_EQ(c.training.steps, 320000);
  // warmup (a fraction of train-iters) follows the later train-iters.
  EXPECT_EQ(c.training.warmup_steps, 3200);
  EXPECT_EQ(c.model.layers, 44);
  EXPECT_EQ(c.origins.at("data.paths"), local + ":3 (data-path)");
  const std::string sources = describe_sources(c);
  EXPECT_CONTAINS(sources, "#   data.paths: " + local + ":3 (data-path) (replaced " + neox + ":" +
                               std::to_string(line_of(kNeox20B, "\"data-path\"")) +
                               " (data-path))");
  EXPECT_CONTAINS(sources, "# " + neox + ": read as a GPT-NeoX config");
  EXPECT_CONTAINS(sources, "# " + local + ": read as a GPT-NeoX config");
  // A file of this project's keys on top of a NeoX one merges too.
  const std::string mine =
      write("model:\n  vocab_size: 50432\nparallel: {data: auto}\n", "mine.yaml");
  const Config d = load_checked_config(std::vector<std::string>{neox, mine}, {});
  EXPECT_EQ(d.model.vocab_size, 50432);
  EXPECT_EQ(d.parallel.data, 0);
  // A relation the merge breaks names the NeoX key's file and line.
  const std::string shorter = write("training: {steps: 1000}\n", "shorter.yaml");
  const std::string message = error_of([&] {
    load_checked_config(std::vector<std::string>{neox, shorter}, {});
  });
  EXPECT_EQ(message.rfind(neox + ":" + std::to_string(line_of(kNeox20B, "\"warmup\"")) +
                              " (warmup): training.warmup_steps: must be <= training.steps",
                          0),
            0u)
      << message;
}

TEST_F(ConfigTest, UnknownNeoXKeyIsOneErrorNamingItAndTheFile) {
  const std::string text = "num-layers: 4\nhidden-size: 64\nnum-layerz: 4\n";
  const std::string path = write(text, "neox.yml");
  const std::string message = error_of([&] { load_checked_config(path, {}); });
  EXPECT_EQ(message.rfind(path + ":3: num-layerz: not a GPT-NeoX key", 0), 0u) << message;
  EXPECT_CONTAINS(message, "did you mean num-layers?");
}

TEST_F(ConfigTest, NeoXValuesWithoutAnEquivalentAreOneErrorNamingKeyAndValue) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"pos-emb: alibi\n", "pos-emb: 'alibi' has no equivalent here"},
      {"lr-decay-style: linear\n", "lr-decay-style: 'linear' has no equivalent here"},
      {"norm: scalenorm\n", "norm: 'scalenorm' has no equivalent here"},
      {"optimizer: {type: Lion, params: {lr: 0.001}}\n",
       "optimizer.type: 'Lion' has no equivalent"},
      {"fp16: {enabled: true, loss_scale: 128}\n", "fp16.loss_scale: 128 (a fixed loss scale)"},
      {"partition-activations: true\n", "partition-activations: true has no equivalent"},
      {"train-iters: 100\nlr-decay-iters: 80\n", "lr-decay-iters: is 80 but train-iters is 100"},
      {"hidden-dropout: 0.1\nattention-dropout: 0.0\n", "attention-dropout: this project has one"},
      {"init_method: small_init\n",
       "init_method: init_method small_init with "
       "output_layer_init_method scaled_normal has no equivalent"},
      {"train_micro_batch_size_per_gpu: 4\ngradient_accumulation_steps: 32\n",
       "gradient_accumulation_steps: 32 accumulation steps"},
      {"warmup: 0.01\n", "warmup: is a fraction of train-iters, which no GPT-NeoX file gives"},
      {"valid-data-paths: [a]\n", "valid-data-paths: has no equivalent here"},
      {"tokenizer-type: GPT2BPETokenizer\n", "tokenizer-type: 'GPT2BPETokenizer' is not read"},
      {"num-layers: 4\nmodel: {hidden: 64}\n", "model: a section of this project's keys"},
      {"clip-grad: 1.0\ngradient_clipping: 0.5\n",
       "sets training.grad_clip, as does gradient_clipping"},
      {"attention-config: [[[global], 2], [[local], 2]]\n", "'local' attention has no equivalent"},
      {"num-layers: 2\nnum_layers: 3\n", "num_layers: written twice (as num-layers at"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string path = write(text, "bad.yml");
    const std::string message = error_of([&] { load_checked_config(path, {}); });
    EXPECT_EQ(message.rfind(path + ":", 0), 0u) << message;
    EXPECT_CONTAINS(message, expected);
  }
}

TEST_F(ConfigTest, NeoXFileIsToldApartFromAProjectConfig) {
  EXPECT_TRUE(looks_like_neox(YAML::Load("{num-layers: 2}")));
  EXPECT_TRUE(looks_like_neox(YAML::Load("{seed: 2, train_batch_size: 8}")));
  EXPECT_FALSE(looks_like_neox(YAML::Load("{model: {layers: 2}}")));
  // A project config with a typo stays a project config (its error says so).
  EXPECT_FALSE(looks_like_neox(YAML::Load("{modle: {layers: 2}}")));
}

TEST_F(ConfigTest, NeoXTokenizerAndDataSettingsConvert) {
  const std::string path = write(
      "tokenizer-type: HFTokenizer\nvocab-file: tok/tokenizer.json\n"
      "train-data-paths: [a/x_text_document, b/y_text_document]\ntrain-data-weights: [1, 3]\n"
      "pipe-parallel-size: 0\nprecision: bfloat16\n",
      "neox.yml");
  // The config's own checks only: the tokenizer file is opened by the domain checks.
  const Config c = load_config(path);
  EXPECT_EQ(c.data.tokenizer, "tok/tokenizer.json");
  EXPECT_EQ(c.data.kind, DataKind::kIndexed);
  EXPECT_EQ(c.data.paths, (std::vector<std::string>{"a/x_text_document", "b/y_text_document"}));
  EXPECT_EQ(c.data.weights, (std::vector<double>{1, 3}));
  EXPECT_EQ(c.parallel.pipeline, 1);
  EXPECT_EQ(c.training.precision, Precision::kBf16);
}

// NeoX pads the vocabulary to a multiple of this times the tp size, as
// model.vocab_multiple does.
TEST_F(ConfigTest, NeoXVocabularyMultipleMapsToVocabMultiple) {
  const std::string path = write("make-vocab-size-divisible-by: 128\n", "neox.yml");
  const Config c = load_config(path);
  EXPECT_EQ(c.model.vocab_multiple, 128);
  EXPECT_NE(to_yaml(c).find("vocab_multiple: 128"), std::string::npos);
}

// docs/config.md holds the table the translator reads, row for row.
TEST(NeoxKeys, DocsHoldTheMappingTable) {
  std::ifstream in("docs/config.md");
  ASSERT_TRUE(in) << "run from the source directory";
  std::stringstream docs;
  docs << in.rdbuf();
  EXPECT_NE(docs.str().find(neox_keys_markdown()), std::string::npos)
      << "docs/config.md's GPT-NeoX table differs from config/neox_keys.cpp; paste:\n"
      << neox_keys_markdown();
}

TEST(NeoxKeys, EveryKeyIsListedOnceAndMapsToAProjectKeyOrNone) {
  std::set<std::string> seen;
  for (const NeoxKey& key : neox_keys()) {
    EXPECT_TRUE(seen.insert(neox_normalized(key.name)).second) << key.name;
    if (key.use == NeoxUse::kCopy) EXPECT_NE(std::string(key.target).find('.'), std::string::npos);
    if (key.use == NeoxUse::kIgnore || key.use == NeoxUse::kCheck) EXPECT_STREQ(key.target, "");
  }
  EXPECT_EQ(find_neox_key("num_layers"), find_neox_key("num-layers"));
  EXPECT_EQ(find_neox_key("layers"), nullptr);
  // Prefix entries: every wandb_ and deepspeed_ key is known (and ignored).
  ASSERT_NE(find_neox_key("wandb_team"), nullptr);
  EXPECT_EQ(find_neox_key("wandb_team")->use, NeoxUse::kIgnore);
  EXPECT_EQ(find_neox_key("deepspeed-mpi"), find_neox_key("deepspeed_slurm"));
  EXPECT_EQ(find_neox_key("deepspeed"), nullptr);
}

}  // namespace
}  // namespace cmpi::config
