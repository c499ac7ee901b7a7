#include "parallel/pipeline/pipeline_schedule.h"

#include <algorithm>
#include <stdexcept>

namespace cmpi::parallel {
namespace {

using Kind = PipelineAction::Kind;

void check_arguments(const std::string& schedule, int64_t stage, int64_t stages,
                     int64_t micro_batches) {
  if (stages < 1)
    throw std::invalid_argument(schedule + " schedule: needs at least 1 stage, got " +
                                std::to_string(stages));
  if (stage < 0 || stage >= stages)
    throw std::invalid_argument(schedule + " schedule: stage " + std::to_string(stage) +
                                " does not exist in " + std::to_string(stages) + " stages");
  if (micro_batches < 1)
    throw std::invalid_argument(schedule + " schedule: needs at least 1 micro-batch, got " +
                                std::to_string(micro_batches));
}

}  // namespace

std::vector<PipelineAction> GpipeSchedule::actions(int64_t stage, int64_t stages,
                                                   int64_t micro_batches) const {
  check_arguments(name(), stage, stages, micro_batches);
  std::vector<PipelineAction> list;
  list.reserve(size_t(2 * micro_batches));
  for (int64_t m = 0; m < micro_batches; ++m) list.push_back({Kind::kForward, m});
  for (int64_t m = 0; m < micro_batches; ++m) list.push_back({Kind::kBackward, m});
  return list;
}

std::vector<PipelineAction> OneForwardOneBackwardSchedule::actions(int64_t stage, int64_t stages,
                                                                   int64_t micro_batches) const {
  check_arguments(name(), stage, stages, micro_batches);
  const int64_t warm_up = std::min(stages - stage - 1, micro_batches);
  std::vector<PipelineAction> list;
  list.reserve(size_t(2 * micro_batches));
  int64_t forwarded = 0, backwarded = 0;
  while (forwarded < warm_up) list.push_back({Kind::kForward, forwarded++});
  while (forwarded < micro_batches) {
    list.push_back({Kind::kForward, forwarded++});
    list.push_back({Kind::kBackward, backwarded++});
  }
  while (backwarded < micro_batches) list.push_back({Kind::kBackward, backwarded++});
  return list;
}

std::unique_ptr<PipelineSchedule> make_pipeline_schedule(config::PipelineSchedule schedule) {
  switch (schedule) {
    case config::PipelineSchedule::kGpipe:
      return std::make_unique<GpipeSchedule>();
    case config::PipelineSchedule::kOneFOneB:
      return std::make_unique<OneForwardOneBackwardSchedule>();
  }
  throw std::logic_error("make_pipeline_schedule: a schedule without a case");
}

std::unique_ptr<PipelineSchedule> make_pipeline_schedule(const std::string& name) {
  for (const auto& spelling : config::kPipelineScheduleSpellings)
    if (name == spelling.name) return make_pipeline_schedule(spelling.value);
  throw std::invalid_argument("parallel.schedule: unknown pipeline schedule '" + name +
                              "' (known: gpipe, 1f1b)");
}

int64_t max_in_flight(const std::vector<PipelineAction>& actions) {
  int64_t in_flight = 0, most = 0;
  for (const auto& action : actions) {
    in_flight += action.kind == Kind::kForward ? 1 : -1;
    most = std::max(most, in_flight);
  }
  return most;
}

}  // namespace cmpi::parallel
