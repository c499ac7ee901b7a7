// The GPT's normalisation layer, LayerNorm or RMSNorm (GptOptions::norm), over
// the last dimension, in float32 whatever the compute dtype (rounded back to
// it once; parallel/low_precision_ops.h):
//   layernorm: (x − mean(x)) / √(var(x) + eps) · weight + bias
//   rmsnorm:   x / √(mean(x²) + eps) · weight          (Llama; no bias)
// A LayerNorm without bias (GptOptions::bias false) has none either. The
// parameters are "weight" and "bias", as torch::nn::LayerNorm registers them,
// so checkpoints of LayerNorm models keep their names. Under sequence
// parallelism each tp rank normalises its own positions, and the parameters
// enter through sum_gradient_over_tp (their gradient summed over tp).
#pragma once

#include <torch/torch.h>

#include "comm/communicator.h"
#include "models/gpt_options.h"

namespace cmpi::models {

class NormImpl : public torch::nn::Module {
 public:
  NormImpl(const GptOptions& options, int64_t features);
  // `sequence_tp`: the tp group under sequence parallelism, else nullptr.
  torch::Tensor forward(const torch::Tensor& x, comm::Communicator* sequence_tp = nullptr);

  torch::Tensor weight;
  torch::Tensor bias;  // undefined for RMSNorm and without bias

 private:
  NormKind kind_;
  double eps_;
};
TORCH_MODULE(Norm);

}  // namespace cmpi::models
