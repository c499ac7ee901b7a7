#include "generate/model_loader.h"

#include <mpi.h>

#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "checkpoint/loaded_checkpoint.h"
#include "checkpoint/slice_spec.h"
#include "hf/hf_pretrained.h"
#include "models/family/gpt_family.h"

namespace cmpi::generate {
namespace {

// Copies `values` (a global tensor, row-major) into `param`, whose shape
// must hold exactly as many.
void fill(torch::Tensor& param, const std::string& name, const std::vector<float>& values,
          const std::string& source) {
  if (int64_t(values.size()) != param.numel())
    throw std::runtime_error(source + ": parameter " + name + " has " +
                             std::to_string(values.size()) + " values, the model needs " +
                             std::to_string(param.numel()) + " (" + c10::str(param.sizes()) + ")");
  torch::NoGradGuard no_grad;
  std::memcpy(param.data_ptr<float>(), values.data(), values.size() * sizeof(float));
}

}  // namespace

std::unique_ptr<LoadedModel> LoadedModel::load(const ModelSource& source) {
  std::unique_ptr<LoadedModel> loaded(new LoadedModel());
  loaded->groups_ =
      std::make_unique<parallel::ProcessGroups>(MPI_COMM_SELF, parallel::ParallelDims{});
  models::GptOptions options = models::gpt_options(source.config.model);
  options.dropout = 0.0;
  options.precision = models::ComputePrecision::kFp32;
  options.recompute = models::Recompute::kNone;
  options.sequence_parallel = false;
  loaded->model_ = models::Gpt(options, *loaded->groups_);
  auto params = loaded->model_->named_parameters();

  std::function<std::vector<float>(const std::string&)> weights;
  std::unique_ptr<checkpoint::LoadedCheckpoint> checkpoint;
  std::unique_ptr<hf::HfPretrained> pretrained;
  if (source.kind == ModelSource::Kind::kCheckpoint) {
    std::set<std::string> wanted;
    for (const auto& item : params) wanted.insert(item.key());
    checkpoint = std::make_unique<checkpoint::LoadedCheckpoint>(
        checkpoint::LoadedCheckpoint::read(source.dir, &wanted));
    weights = [&](const std::string& name) { return checkpoint->assemble(name).values; };
  } else {
    pretrained =
        std::make_unique<hf::HfPretrained>(hf::HfPretrained::open(source.dir, source.config.model));
    weights = [&](const std::string& name) { return pretrained->weights(name); };
  }
  // A vocabulary table may come with another layout's padding rows (a tp2
  // checkpoint of 127 tokens holds 128), or none (Hugging Face): cut or
  // zero-fill them to this model's, after the rows in use.
  std::map<std::string, int64_t> used_rows;
  for (const auto& layout : loaded->model_->layouts()) used_rows[layout.name] = layout.used_rows;
  for (auto& item : params) {
    auto values = weights(item.key());
    const auto& param = item.value();
    const int64_t used = used_rows.count(item.key()) ? used_rows.at(item.key()) : -1;
    if (used >= 0 && param.dim() == 2 && int64_t(values.size()) % param.size(1) == 0 &&
        int64_t(values.size()) / param.size(1) >= used)
      values = checkpoint::resize_rows(std::move(values), param.size(1), param.size(0));
    fill(item.value(), item.key(), values, source.dir);
  }
  loaded->model_->eval();
  return loaded;
}

}  // namespace cmpi::generate
