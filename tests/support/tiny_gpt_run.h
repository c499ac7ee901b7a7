// What the trajectory tests (data, tensor and ZeRO parallel) share: a GPT
// small enough to train for ten steps in seconds, one Trainer run on a given
// communicator and layout, the single-rank reference every layout is held to,
// and the step-by-step comparison with it.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "comm/comm_stats.h"
#include "comm/policy_config.h"
#include "config/config.h"
#include "parallel/mesh/parallel_dims.h"

namespace cmpi::testing {

// 2 layers, hidden 32, 4 heads, vocabulary 64, sequences of 16 tokens; 10
// steps on a global batch of 8 in micro-batches of 2, with warm-up and decay;
// Markov data (branching 3) seeded from `seed`. Gradient clipping and the
// bucket size stay at the Config defaults: each test sets what it exercises.
config::Config tiny_gpt_config(uint64_t seed);

// tiny_gpt_config with GPT-NeoX's switches: two heads of 16 dimensions (tp2
// splits them one a rank), rotary on 25 % of each head's dimensions, the
// parallel residual, untied embeddings, the tanh GeLU, neox init, and 4 KiB
// gradient buckets (several per block).
config::Config tiny_neox_config(uint64_t seed);

// tiny_gpt_config with Llama's switches: 4 query heads over 2 key/value heads
// (tp2 splits the key/value heads, each with its two query heads), RMSNorm,
// a SwiGLU MLP 80 wide, no biases, rotary over the whole head at base
// 500000 with Llama 3's frequency scaling (factor 8 over an original context
// of 8), untied embeddings, 4 KiB gradient buckets.
config::Config tiny_llama_config(uint64_t seed);

// A layout of dp x tp x pp ranks at a ZeRO stage.
parallel::ParallelDims dims_of(int dp, int tp = 1, int pp = 1, int zero = 0);

// `config` at ZeRO stage `stage`.
config::Config with_zero(config::Config config, int stage);

// ResNet depth 11 (stem, 3 bottleneck blocks, head), width 4, 16x16 images of
// 3 channels in 4 classes (noise 0.5); 8 steps on a global batch of 16 in
// micro-batches of 4; Adam's eps 1e-3 (why: tiny_gpt_run.cpp); buckets of
// 4 KiB so dp reduces several.
config::Config tiny_resnet_config(uint64_t seed);

struct TinyGptRun {
  std::vector<double> losses;                          // per step
  std::vector<std::pair<int64_t, double>> val_losses;  // (step, loss) per evaluation
  comm::OpCounters zero_traffic;                       // what went through the zero group
  comm::OpCounters dp_allreduce;                       // the dp group's allreduces
  comm::OpCounters zero_reduce_scatter;                // the zero group's reduce-scatters
  comm::OpCounters zero_allgather;                     // the zero group's allgathers
  int64_t peak_gathered_parameter_bytes = 0;           // this rank's, under ZeRO-3
  std::vector<double> loss_scales;                     // fp16: the scale of each step
  int64_t skipped_steps = 0;
  int64_t overflow_steps = 0;  // fp16: skipped steps the loss scale absorbed
};

// Trains on `comm` (every rank of it calls this); `dims` must cover its size.
TinyGptRun train_tiny_gpt(MPI_Comm comm, const config::Config& config,
                          const parallel::ParallelDims& dims,
                          const comm::PolicyConfig& policy = {});

// Splits MPI_COMM_WORLD into groups of `group_size` consecutive ranks and
// trains on each (every rank of the world calls this).
TinyGptRun train_in_groups_of(int group_size, const config::Config& config,
                              const parallel::ParallelDims& dims,
                              const comm::PolicyConfig& policy = {});

// The single-rank trajectory: world rank 0 trains alone, every rank of the
// world gets its losses.
std::vector<double> single_rank_losses(const config::Config& config);

// A policy that sends every message of `groups`, whatever its size, through
// `codec` on the compressed algorithms (e.g. "mpc", "identity").
comm::PolicyConfig every_message_of(const std::vector<comm::GroupKind>& groups,
                                    const std::string& codec);

// Every step's loss within `relative_tolerance` of the reference's.
void expect_same_trajectory(const std::vector<double>& reference, const std::vector<double>& losses,
                            double relative_tolerance, const std::string& what);

}  // namespace cmpi::testing
