#include "models/parallelize_model.h"

#include <stdexcept>

#include "models/cnn/resnet_parallelize.h"

namespace cmpi::models {

std::unique_ptr<TrainModel> parallelize_model(const config::Config& config,
                                              parallel::ProcessGroups& groups,
                                              ModelBuildOptions options) {
  switch (config.model.kind) {
    case config::ModelFamily::kGpt:
      return parallelize_gpt(config, groups, std::move(options));
    case config::ModelFamily::kResnet:
      if (options.dump_tensors)
        throw std::invalid_argument(
            "model.kind resnet: --dump-tensors writes a GPT's gradients and transformer-block "
            "activations, the codec benchmark's data sets; a ResNet has none of those");
      if (options.cuda_device >= 0)
        throw std::invalid_argument(
            "model.kind resnet trains on the CPU only; run.device asks for a CUDA device");
      return parallelize_resnet(config, groups);
  }
  throw std::logic_error("parallelize_model: a model family without a case");
}

}  // namespace cmpi::models
