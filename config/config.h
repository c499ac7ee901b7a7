// Config: the typed form of a run's YAML file, one struct per section, with
// the defaults a user gets for every key left out. Loaded and validated by
// load_config (config_loader.h); nothing else reads the YAML.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "comm/policy_config.h"
#include "config/config_enums.h"

namespace cmpi::config {

struct RunConfig {
  std::string name = "run";
  std::string dir = "runs";  // the run directory is <dir>/<name>
  uint64_t seed = 1234;      // model init and dropout
  // Refuse to start a run whose estimated memory exceeds what the node has
  // available (memory_preflight.h).
  bool memory_check = true;
  // Seconds one communication call may wait before the watchdog ends the
  // job (comm/watchdog.h); 0: no deadline; kAutoTimeout (`auto`, the
  // default): derived from the run's own waits (comm/auto_deadline.h), never
  // below timeout_floor.
  static constexpr double kAutoTimeout = -1.0;
  double timeout = kAutoTimeout;
  // Seconds: the least deadline under timeout auto (comm::AutoDeadline's
  // kDefaultFloorSeconds; config_test holds the two equal).
  double timeout_floor = 20.0;
  // What MFU divides by, per rank: auto (the GEMM rate measured at start-up),
  // a device (a100, h100, ...) or FLOP/s (plan/peak_flops.h).
  std::string peak_flops = "auto";
  // Where the model's parameters, optimizer state, batches and activations
  // live: cpu, cuda (a GPU per rank by its rank on the node; refused where
  // none is visible) or auto (cuda where visible, else cpu).
  RunDevice device = RunDevice::kCpu;
};

struct ModelConfig {
  // gpt: the GPT below (vocab_size .. init_std); resnet: a pre-activation
  // ResNet v2 image classifier (depth .. classes; docs/cnn.md).
  ModelFamily kind = ModelFamily::kGpt;
  int64_t vocab_size = 256;
  // The embedding and head tables get round_up(vocab_size, vocab_multiple x
  // tp) rows (Megatron-LM's make-vocab-size-divisible-by), so any tp splits
  // them; the padded rows never win a softmax nor reach an export. 1: pad
  // only as far as tp needs (a vocabulary tp divides is not padded).
  int64_t vocab_multiple = 1;
  int64_t seq_len = 64;
  int64_t layers = 2;
  int64_t hidden = 64;
  int64_t heads = 4;
  int64_t mlp_ratio = 4;  // MLP inner width = mlp_ratio * hidden
  double dropout = 0.0;
  double init_std = 0.02;
  // true: the output head reuses the token embedding's table (GPT-2);
  // false: a separate head table "output_head.weight" (GPT-NeoX-20B), which
  // leaves the token embedding's gradient sparse (only the rows of the
  // step's tokens), so it is reduced over dp in its own bucket.
  bool tie_embeddings = true;
  // The GPT's architecture beyond its sizes (models/gpt_options.h); the
  // defaults are GPT-2's, GPT-NeoX-20B's is position rotary, rotary_pct 0.25,
  // parallel_residual, mlp_activation gelu_tanh, init neox, tie_embeddings
  // false.
  std::string position = "learned";  // learned | rotary
  double rotary_pct = 0.25;          // rotary: fraction of each head's dims that rotate
  double rotary_base = 10000.0;      // rotary: base of the angles' wavelengths
  // > 0: attention scores in blocks of this many keys with an online softmax
  // (models/blocked_attention.h); 0: the plain [T, T] scores.
  int64_t attention_block_size = 0;
  // The attention core's kernel: auto (LibTorch's fused scaled-dot-product
  // attention on a CUDA device, the unfused softmax on the CPU), fused or
  // unfused. Attention dropout in training always runs unfused.
  AttentionBackend attention_backend = AttentionBackend::kAuto;
  bool parallel_residual = false;  // x + attn(ln1(x)) + mlp(ln2(x))
  // gelu | gelu_tanh | swiglu (Llama's gated MLP: down(silu(gate(x)) · up(x)))
  std::string mlp_activation = "gelu";
  std::string init = "gpt2";  // gpt2 | neox (small_init / wang_init)
  // Llama-family switches (docs/config.md): RMSNorm instead of LayerNorm and
  // its epsilon (both kinds), grouped-query attention (kv_heads key/value
  // heads shared by heads / kv_heads query heads each; 0: as many as
  // heads), the MLP's inner width (0: mlp_ratio * hidden), no biases in the
  // linear layers and norms (bias: false), and Llama 3's rotary frequency
  // scaling (rope_scaling_factor 0: none; see models/rotary_embedding.h).
  Normalization norm = Normalization::kLayerNorm;
  double norm_eps = 1e-5;
  int64_t kv_heads = 0;
  int64_t intermediate_size = 0;
  bool bias = true;
  double rope_scaling_factor = 0.0;
  double rope_low_freq_factor = 1.0;
  double rope_high_freq_factor = 4.0;
  int64_t rope_original_max_positions = 8192;
  // A Hugging Face GPT-NeoX or GPT-2 directory (config.json, safetensors)
  // whose weights replace the initial ones at step 0 (hf/hf_pretrained.h);
  // empty: none. A resumed run takes its checkpoint's weights instead.
  std::string init_from = "";
  // resnet: depth 9n + 2 (three groups of n bottleneck blocks), inner width
  // of the first group, square images of image_size x image_size with
  // `channels` channels, `classes` output classes.
  int64_t depth = 29;
  int64_t width = 16;
  int64_t image_size = 16;
  int64_t channels = 3;
  int64_t classes = 10;
  // "relu" (default) | "silu" (smooth; see models/cnn/resnet_plan.h).
  std::string activation = "relu";
};

// DiLoCo (parallel.dp_sync: diloco; parallel/diloco/): each dp replica takes
// its own inner AdamW steps and every sync_every steps an outer SGD step with
// Nesterov momentum on the pseudo-gradient (the weights' change since the
// last sync) averaged over dp. fragments > 1 is the streaming variant: the
// layers cut into that many fragments, fragment f synchronised at the steps
// where (step - f * sync_every / fragments) % sync_every == 0, counted from
// the end of the warm-up: its first warmup_steps steps reduce gradients over
// dp as every_step does, so the replicas leave together from a trained point.
struct DilocoConfig {
  int64_t sync_every = 32;      // inner steps between two syncs of a fragment (H)
  double outer_lr = 0.7;        // the outer SGD's learning rate (the DiLoCo paper's)
  double outer_momentum = 0.9;  // its Nesterov momentum (the paper's)
  int64_t fragments = 1;        // 1: the whole model at once; F > 1: streaming
  int64_t warmup_steps = 0;     // every-step dp reduction before the replicas go apart
};

struct ParallelConfig {
  int64_t data = 0;  // 0 = auto: world / (tensor * pipeline * spatial * context)
  int64_t tensor = 1;
  int64_t pipeline = 1;
  int64_t spatial = 1;
  // Context parallelism (GPT): every sequence split over this many ranks,
  // attention as a ring of key/value blocks (parallel/context/).
  int64_t context = 1;
  int64_t zero_stage = 0;  // 0..3
  // ZeRO-3 only: gather parameters per layer (layer: peak = shard + ~2
  // layers, sharded initialisation) or the whole model once per step (model).
  std::string zero3_gather = "layer";
  // ZeRO 2/3 only: where a step's micro-batches accumulate their gradients:
  // "full_buffer" (a flat buffer of the whole stage, reduce-scattered once
  // per step) or "shard" (each micro-batch's buckets reduce-scattered as its
  // backward finishes them and added into the 1/dp shard: no full buffer,
  // M times the gradient traffic; docs/planner.md).
  std::string zero_gradient_memory = "full_buffer";
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;  // gpipe | 1f1b
  // How the layers are split over the pipeline stages
  // (parallel.pipeline_balance): "uniform" (L / P each, the first L % P one
  // more), "auto" (the split whose largest per-rank memory estimate, the
  // embedding and head counted, is smallest; GPT only), or the explicit
  // list in stage_layers, which then wins. The older key
  // parallel.stage_layers (`balanced` or a list) reads into the same fields.
  std::string pipeline_balance = "uniform";
  // Layers per pipeline stage, first stage first; empty = pipeline_balance.
  std::vector<int64_t> stage_layers;
  int64_t dp_bucket_bytes = 25LL << 20;  // gradient bucket for the DP allreduce
  // Megatron-style sequence parallelism for the GPT (tensor > 1): LayerNorms,
  // dropouts and residual adds hold 1/tensor of the sequence each, and tp
  // traffic is all-gather / reduce-scatter instead of allreduce.
  bool sequence_parallel = false;
  // The dtype the forward tp sums travel and add in (GPT, tensor > 1): the
  // row-parallel layers' partial products, the vocab-parallel embedding's
  // rows and, with sequence_parallel, their reduce-scatters. "float32":
  // summed unrounded, rounded to the compute dtype once after the bias;
  // "compute": each rank's part rounded to training.precision's dtype and
  // summed as 16-bit words (2 bytes a value; the bias added after the sum).
  // The same thing under fp32 compute and with tensor 1.
  std::string tp_forward_sum = "float32";
  // How the dp replicas agree (parallel.dp_sync): "every_step" (gradients
  // reduced over dp in every step) or "diloco" (replicas step alone, averaged
  // every diloco.sync_every steps; GPT, ZeRO stage 0, no context parallelism).
  std::string dp_sync = "every_step";
  DilocoConfig diloco;
  // Two model replicas pipelined in opposite directions over the same pp
  // ranks (GEMS-MASTER; model.kind resnet only), each running half of every
  // rank's micro-batches; their gradients are summed with each other.
  bool bidirectional = false;
  // Spatial parallelism (model.kind resnet): how the images are cut over the
  // `spatial` ranks (square | vertical | horizontal), and how many pipeline
  // stages, from the first, run on tiles (0 = all of them).
  std::string spatial_slicing = "vertical";
  int64_t spatial_stages = 0;
};

struct TrainingConfig {
  int64_t steps = 100;
  int64_t global_batch = 32;  // sequences per optimizer step, over all DP ranks
  int64_t micro_batch = 8;    // sequences per forward/backward on one rank
  double lr = 3e-3;
  double min_lr = 3e-4;
  int64_t warmup_steps = 10;
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double grad_clip = 1.0;  // 0 disables clipping
  int64_t threads = 1;     // LibTorch intra-op threads per rank
  // Reduce gradient buckets over dp on a communication thread while the last
  // micro-batch's backward runs (false: all after backward, in the step).
  bool overlap_grad_reduce = true;
  // A step whose global gradient norm is non-finite never updates the
  // weights. When that or a non-finite loss happens (on any rank) abort ends
  // the job there, naming the step, the rank(s) and what went non-finite;
  // skip_step goes on with the next step, unless more than
  // max_skipped_steps steps in a row were skipped (or the loss alone was
  // non-finite, whose update could not be held back).
  std::string on_nonfinite = "abort";  // abort | skip_step
  int64_t max_skipped_steps = 5;       // >= 1
  // Mixed precision (GPT only): the dtype of forward and backward. Weights
  // and AdamW state stay float32 (the masters); gradients accumulate and are
  // reduced over dp in float32. fp16 is emulated on the CPU (16-bit storage,
  // float32 arithmetic) and scales its loss dynamically.
  Precision precision = Precision::kFp32;  // fp32 | bf16 | fp16
  // fp16 dynamic loss scaling: start at loss_scale_initial; an overflowing
  // step is skipped and multiplies the scale by loss_scale_backoff (never
  // below loss_scale_min); loss_scale_growth_interval finite steps in a row
  // multiply it by 2.
  double loss_scale_initial = 4096;  // 2^12, GPT-NeoX-20B's initial_scale_power 12
  int64_t loss_scale_growth_interval = 1000;
  double loss_scale_backoff = 0.5;
  double loss_scale_min = 1;
  // Activation recomputation (GPT): none | selective (the attention core) |
  // full (whole blocks: the first recompute_layers of each pipeline stage,
  // 0 = all).
  std::string recompute = "none";
  int64_t recompute_layers = 0;
};

struct DataConfig {
  // markov: tokens from a fixed random Markov chain; indexed: Megatron/GPT-NeoX
  // .bin/.idx datasets sampled as GPTDataset does (data/gpt_sample_index.h);
  // images: synthetic labelled images (data/synthetic_images.h), the only
  // kind model.kind resnet reads and its default.
  DataKind kind = DataKind::kMarkov;  // markov | indexed | images
  uint64_t seed = 42;                 // the chain (markov); the shuffles (indexed)
  int64_t branching = 4;       // successors per token in the chain (entropy <= log branching)
  double concentration = 1.0;  // Dirichlet-like spread of successor probabilities
  // indexed: dataset prefixes (PREFIX.bin + PREFIX.idx) and their blend
  // weights (empty: equal), the train/valid ratios of each dataset's
  // documents, and where the sample index caches go (empty: beside the data).
  std::vector<std::string> paths;
  std::vector<double> weights;
  std::vector<double> split = {0.98, 0.02};
  std::string cache_dir = "";
  // The tokenizer the data was made with ("bytes" or a tokenizer.json path;
  // empty: not said): its ids must fit model.vocab_size.
  std::string tokenizer = "";
  double noise = 0.5;  // images: standard deviation of the pixel noise
};

struct EvalConfig {
  int64_t every = 0;    // validation loss every N steps and at the last; 0 = never
  int64_t batches = 4;  // global batches of the held-out split per evaluation
};

struct CheckpointConfig {
  std::string dir = "";   // default <run dir>/checkpoints
  int64_t every = 0;      // 0 = never
  int64_t keep_last = 3;  // complete checkpoints kept; 0 = all
  // Write shards on a background thread from an in-memory snapshot while
  // training goes on (checkpoint/checkpoint_manager.h).
  bool async = false;
};

struct LogConfig {
  int64_t every = 10;
  bool metrics_jsonl = true;
  bool tensorboard = false;  // rank 0 writes <run dir>/tensorboard/events.out.tfevents.*
};

struct Config {
  std::string source;  // file(s) the config came from ("a.yaml + b.yaml")
  // Key path ("training.lr") -> where it was written ("configs/x.yaml:14" or
  // "--set training.lr=0.01"), for errors found after loading. Keys left at
  // their default are absent.
  std::map<std::string, std::string> origins;
  // Key path -> the places that set it before the one in `origins` (earlier
  // --config files, or the file under a --set), first first.
  std::map<std::string, std::vector<std::string>> replaced;
  // Said when the job starts: how a file was read ("read as a GPT-NeoX
  // config"), and settings a file holds that mean nothing here.
  std::vector<std::string> notes, load_warnings;
  RunConfig run;
  ModelConfig model;
  ParallelConfig parallel;
  TrainingConfig training;
  DataConfig data;
  EvalConfig eval;
  comm::PolicyConfig compression;
  CheckpointConfig checkpoint;
  LogConfig log;
};

}  // namespace cmpi::config
