// The table itself: facts about GPT-NeoX's keys (their names and meanings as
// NeoX documents them) against this project's keys (docs/config.md).
#include "config/neox_keys.h"

#include <algorithm>

namespace cmpi::config {

const std::vector<NeoxKey>& neox_keys() {
  using U = NeoxUse;
  static const std::vector<NeoxKey> table = {
      // The model.
      {"num-layers", U::kCopy, "model.layers", ""},
      {"hidden-size", U::kCopy, "model.hidden", ""},
      {"num-attention-heads", U::kCopy, "model.heads", ""},
      {"seq-length", U::kCopy, "model.seq_len", ""},
      {"max-position-embeddings", U::kCheck, "",
       "at least `seq-length`; positions beyond `seq_len` are never used here, so no table row "
       "is made for them"},
      {"pos-emb", U::kConvert, "model.position",
       "`rotary` or `learned`; `sinusoidal`, `rpe`, `alibi` and `none` have no equivalent "
       "(an error)"},
      {"rotary-pct", U::kCopy, "model.rotary_pct", ""},
      {"rotary-emb-base", U::kCopy, "model.rotary_base", ""},
      {"gpt-j-residual", U::kCopy, "model.parallel_residual", ""},
      {"no-weight-tying", U::kConvert, "model.tie_embeddings", "the negation"},
      {"norm", U::kConvert, "model.norm", "`layernorm` or `rmsnorm`; `scalenorm` is an error"},
      {"layernorm-epsilon", U::kConvert, "model.norm_eps", "when `norm` is `layernorm`"},
      {"rms-norm-epsilon", U::kConvert, "model.norm_eps", "when `norm` is `rmsnorm`"},
      {"hidden-dropout", U::kConvert, "model.dropout",
       "one dropout rate here: `attention-dropout`, if given, must be the same"},
      {"attention-dropout", U::kConvert, "model.dropout", "see `hidden-dropout`"},
      {"init_method", U::kConvert, "model.init",
       "with `output_layer_init_method`: `small_init` and `wang_init` give `neox`, `normal` "
       "and `scaled_normal` give `gpt2`; other pairs are an error"},
      {"output_layer_init_method", U::kConvert, "model.init", "see `init_method`"},
      {"init-method-std", U::kCopy, "model.init_std", ""},
      {"attention-config", U::kCheck, "",
       "every layer `global` (or `flash`, the same attention computed by another kernel); "
       "local, sparse and other attention types are an error"},
      {"activation", U::kConvert, "model.mlp_activation",
       "`gelu` (with `bias-gelu-fusion: true`: `gelu_tanh`, the fused kernel's tanh "
       "approximation); others are an error"},
      {"bias-gelu-fusion", U::kConvert, "model.mlp_activation", "see `activation`"},
      {"make-vocab-size-divisible-by", U::kCopy, "model.vocab_multiple",
       "NeoX pads the vocabulary to a multiple of this times `model-parallel-size`"},
      // The layout.
      {"pipe-parallel-size", U::kConvert, "parallel.pipeline", "0 (no pipeline engine) reads as 1"},
      {"model-parallel-size", U::kCopy, "parallel.tensor", ""},
      {"sequence-parallel", U::kCopy, "parallel.sequence_parallel", ""},
      {"zero_optimization", U::kConvert, "parallel.zero_stage",
       "its `stage` (0 to 3); the DeepSpeed tuning keys beside it (bucket sizes, "
       "`overlap_comm`, ...) are ignored with a warning"},
      {"pipe-partition-method", U::kConvert, "parallel.pipeline_balance",
       "`type:transformer` (equal layers per stage) gives `uniform`; others are an error"},
      // The batch and the optimizer.
      {"train_micro_batch_size_per_gpu", U::kCopy, "training.micro_batch", ""},
      {"train_batch_size", U::kConvert, "training.global_batch, parallel.data",
       "the global batch; with `train_micro_batch_size_per_gpu` and "
       "`gradient_accumulation_steps` also dp = train_batch_size / (micro batch x accumulation)"},
      {"gradient_accumulation_steps", U::kCheck, "",
       "needs `train_batch_size`: the global batch here is a number of sequences, where NeoX "
       "derives it from the world size"},
      {"optimizer", U::kConvert, "training.lr, beta1, beta2, eps, weight_decay",
       "`type` Adam, AdamW, cpu_adam or cpu_torch_adam (decoupled weight decay, as NeoX's "
       "fused Adam); `params` `lr`, `betas`, `eps`, `weight_decay`"},
      {"min_lr", U::kCopy, "training.min_lr", ""},
      {"weight-decay", U::kCopy, "training.weight_decay", ""},
      {"gradient_clipping", U::kCopy, "training.grad_clip", ""},
      {"clip-grad", U::kCopy, "training.grad_clip", ""},
      {"train-iters", U::kCopy, "training.steps", ""},
      {"lr-decay-iters", U::kCheck, "",
       "must equal `train-iters`: the learning rate decays to `min_lr` at the last step here"},
      {"lr-decay-style", U::kCheck, "", "`cosine`, the one schedule here; others are an error"},
      {"warmup", U::kConvert, "training.warmup_steps",
       "a fraction of `train-iters`, rounded to whole steps"},
      {"fp16", U::kConvert, "training.precision, loss_scale_*",
       "`enabled` gives `fp16`; `loss_scale` 0 (dynamic; a fixed scale is an error), "
       "`initial_scale_power` p gives `loss_scale_initial` 2^p, `loss_scale_window` "
       "`loss_scale_growth_interval`, `min_loss_scale` `loss_scale_min`; `hysteresis` is "
       "ignored with a warning (every overflow backs off here)"},
      {"bf16", U::kConvert, "training.precision", "`enabled` gives `bf16`"},
      {"precision", U::kConvert, "training.precision", "`fp32`, `fp16` or `bfloat16`"},
      {"checkpoint-activations", U::kConvert, "training.recompute", "true: `full`, false: `none`"},
      {"checkpoint-num-layers", U::kCheck, "",
       "1 (each block recomputed on its own, as here); other chunk sizes are an error"},
      {"partition-activations", U::kCheck, "",
       "false; true has no equivalent (an error: `parallel.sequence_parallel` splits "
       "activations over tp)"},
      {"seed", U::kCopy, "run.seed", ""},
      // The data.
      {"data-path", U::kConvert, "data.paths", "one prefix; sets `data.kind: indexed`"},
      {"train-data-paths", U::kConvert, "data.paths",
       "a list of prefixes; sets `data.kind: indexed`"},
      {"train-data-weights", U::kCopy, "data.weights", ""},
      {"valid-data-paths", U::kCheck, "",
       "no equivalent (an error): the valid documents are a share of the training datasets "
       "(`split`)"},
      {"test-data-paths", U::kCheck, "", "see `valid-data-paths`"},
      {"split", U::kConvert, "data.split",
       "\"train,valid,test\" weights: the test share joins the valid one, so training reads "
       "the same documents"},
      {"data-impl", U::kCheck, "", "`mmap`, the .bin/.idx format read here"},
      {"tokenizer-type", U::kConvert, "data.tokenizer",
       "`HFTokenizer`: `vocab-file` (a tokenizer.json) is the tokenizer; other types are an "
       "error"},
      {"vocab-file", U::kConvert, "data.tokenizer", "see `tokenizer-type`"},
      // Checkpoints, evaluation and logs.
      {"save", U::kCopy, "checkpoint.dir", ""},
      {"save-interval", U::kCopy, "checkpoint.every", ""},
      {"checkpoint-factor", U::kCopy, "checkpoint.every", ""},
      {"keep-last-n-checkpoints", U::kCopy, "checkpoint.keep_last", ""},
      {"eval-interval", U::kCopy, "eval.every", ""},
      {"eval-iters", U::kCopy, "eval.batches", ""},
      {"log-interval", U::kCopy, "log.every", ""},
      // No meaning here.
      {"load", U::kIgnore, "", "resume with `--resume [PATH]` (default: `checkpoint.dir`)"},
      {"launcher", U::kIgnore, "", "mpirun starts the ranks"},
      {"deepspeed_*", U::kIgnore, "", "DeepSpeed's launcher and switches: no DeepSpeed here"},
      {"hostfile", U::kIgnore, "", "mpirun's `--hostfile`"},
      {"include", U::kIgnore, "", "mpirun's host options"},
      {"exclude", U::kIgnore, "", "mpirun's host options"},
      {"num_gpus", U::kIgnore, "", "the world size is mpirun's `-np`"},
      {"num_nodes", U::kIgnore, "", "the world size is mpirun's `-np`"},
      {"master_port", U::kIgnore, "", "MPI needs no rendezvous port"},
      {"master_addr", U::kIgnore, "", "MPI needs no rendezvous port"},
      {"distributed-backend", U::kIgnore, "", "MPI always"},
      {"use_wandb", U::kIgnore, "", "no Weights & Biases logging"},
      {"wandb_*", U::kIgnore, "", "no Weights & Biases logging"},
      {"comms_logger", U::kIgnore, "", "DeepSpeed's communication logger"},
      {"flops_profiler", U::kIgnore, "", "DeepSpeed's profiler"},
      {"tensorboard-dir", U::kIgnore, "", "metrics go to the run directory"},
      {"log-dir", U::kIgnore, "", "logs go to the run directory"},
      {"steps_per_print", U::kIgnore, "", "`log-interval` sets the progress lines"},
      {"wall_clock_breakdown", U::kIgnore, "", "DeepSpeed's timers"},
      {"scaled-upper-triang-masked-softmax-fusion", U::kIgnore, "", "a CUDA kernel choice"},
      {"scaled-masked-softmax-fusion", U::kIgnore, "", "a CUDA kernel choice"},
      {"rope-fusion", U::kIgnore, "", "a CUDA kernel choice"},
      {"use_bnb_optimizer", U::kIgnore, "", "a CUDA kernel choice"},
      {"synchronize-each-layer", U::kIgnore, "", "a CUDA synchronisation switch"},
      {"output_layer_parallelism", U::kIgnore, "",
       "the head is split over tp by vocabulary rows here"},
      {"checkpoint-validation-with-forward-pass", U::kIgnore, "", "not done here"},
      {"zero_allow_untested_optimizer", U::kIgnore, "", "a DeepSpeed safety switch"},
      {"num-workers", U::kIgnore, "", "data is read by the ranks themselves"},
      {"memory-profiling", U::kIgnore, "", "not done here"},
      {"profile", U::kIgnore, "", "not done here"},
  };
  return table;
}

std::string neox_normalized(const std::string& key) {
  std::string out = key;
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

const NeoxKey* find_neox_key(const std::string& key) {
  const std::string wanted = neox_normalized(key);
  for (const NeoxKey& entry : neox_keys()) {
    const std::string name = neox_normalized(entry.name);
    // "wandb_*": every key of that prefix.
    const bool prefix = !name.empty() && name.back() == '*';
    if (prefix ? wanted.compare(0, name.size() - 1, name, 0, name.size() - 1) == 0 &&
                     wanted.size() >= name.size()
               : name == wanted)
      return &entry;
  }
  return nullptr;
}

std::string neox_keys_markdown() {
  std::string out = "| GPT-NeoX key | here | how |\n|---|---|---|\n";
  for (const NeoxKey& entry : neox_keys()) {
    std::string target = *entry.target ? std::string("`") + entry.target + "`" : "—";
    std::string how = entry.note;
    if (entry.use == NeoxUse::kCopy && how.empty()) how = "as written";
    if (entry.use == NeoxUse::kIgnore) how = "ignored (one warning): " + how;
    out += std::string("| `") + entry.name + "` | " + target + " | " + how + " |\n";
  }
  return out;
}

}  // namespace cmpi::config
