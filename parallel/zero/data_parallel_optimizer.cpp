#include "parallel/zero/data_parallel_optimizer.h"

#include "parallel/zero/zero_optimizer.h"

namespace cmpi::parallel {

std::unique_ptr<DataParallelOptimizer> make_data_parallel_optimizer(
    std::vector<ParamInfo> params, const DataParallelOptimizerOptions& options,
    ProcessGroups& groups) {
  return std::make_unique<ZeroOptimizer>(std::move(params), options, groups);
}

}  // namespace cmpi::parallel
