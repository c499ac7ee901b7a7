// The planner's per-layer ZeRO-3 gathers against the gatherer the trainer
// runs: a GPT stage (whole model tied and untied, a middle stage, a head-only
// stage) runs sequences of training micro-batches (forward, backward, in
// 1F1B and GPipe order) and evaluation passes through a real
// LayerParameterGatherer over dp = the world's ranks, and plan::count_gathers
// replays the same passes on the same stage's sizes. The gathers (allgathers
// of a unit) and the peak bytes of gathered units must be equal, and the
// planner's buckets (plan::zero_unit) must cover each unit exactly as the
// gatherer's ZeroLayout does.
#include <gtest/gtest.h>
#include <mpi.h>
#include <torch/torch.h>

#include <deque>
#include <string>
#include <vector>

#include "models/gpt.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/unmaterialised.h"
#include "parallel/zero/layer_parameter_gatherer.h"
#include "parallel/zero/ordered_comm_queue.h"
#include "parallel/zero/zero_layout.h"
#include "plan/layer_gathers.h"
#include "tests/support/mpi_world.h"

namespace cmpi::parallel {
namespace {

using plan::StagePass;

constexpr int64_t kBatch = 2, kTime = 8, kBucketBytes = 1 << 10;  // several buckets per block

models::GptOptions small_gpt(bool tied) {
  models::GptOptions o;
  o.vocab_size = 32;
  o.seq_len = kTime;
  o.layers = 4;
  o.hidden = 16;
  o.heads = 2;
  o.tie_embeddings = tied;
  o.seed = 7;
  return o;
}

struct Stage {
  std::string name;
  bool tied = true;
  models::StagePlan plan;
};

// What the trainer's ZeRO-3 optimizer lays out for the stage, and the
// gatherer over it, counting its gathers.
class GatheredStage {
 public:
  explicit GatheredStage(const Stage& stage)
      : alone_(MPI_COMM_SELF, ParallelDims{}),
        world_(MPI_COMM_WORLD, world_dims()),
        model_(small_gpt(stage.tied), alone_, stage.plan),
        params_(model_->param_infos()),
        schedule_(model_->layer_schedule()),
        layout_(flat_params(), world_.dp().size(), world_.dp().rank(), kBucketBytes,
                schedule_.unit_ends),
        queue_(false) {
    torch::NoGradGuard no_grad;
    shard_.assign(layout_.shard_size(), 0.0f);
    for (const auto& p : params_) shapes_.push_back(p.tensor.sizes().vec());
    for (const ZeroSegment& s : layout_.owned_segments()) {
      const auto values = params_[s.param].tensor.detach().contiguous();
      const size_t offset = s.flat_offset - layout_.offsets()[s.param];
      std::copy_n(values.data_ptr<float>() + offset, s.length, shard_.data() + s.shard_offset);
    }
    for (size_t i = 0; i < params_.size(); ++i)
      params_[i].tensor.set_data(unmaterialised(shapes_[i]));
    gatherer_ = std::make_unique<LayerParameterGatherer>(params_, shapes_, layout_, schedule_.uses,
                                                         shard_.data(), world_.zero(), queue_,
                                                         uint64_t(1) << 40, [this] { ++gathers_; });
    model_->set_layer_gate(gatherer_.get());
  }
  ~GatheredStage() { model_->set_layer_gate(nullptr); }

  void run(const std::vector<StagePass>& passes) {
    std::deque<torch::Tensor> pending;  // micro-batches awaiting backward, oldest first
    for (StagePass pass : passes) {
      if (pass == StagePass::kBackward) {
        pending.front().backward();
        pending.pop_front();
      } else if (pass == StagePass::kForward) {
        pending.push_back(forward());
      } else {
        torch::NoGradGuard evaluation;
        forward();
      }
    }
  }

  // The planner's view of the same stage: each unit's parameters as runs.
  plan::StageUnits planned_units() const {
    plan::StageUnits stage;
    for (size_t u = 0; u < schedule_.unit_ends.size(); ++u) {
      std::vector<plan::ParameterRun> runs;
      for (size_t i = schedule_.unit_begin(u); i < schedule_.unit_ends[u]; ++i)
        runs.push_back({int64_t(layout_.params()[i].numel), layout_.params()[i].own_buckets});
      stage.units.push_back(plan::zero_unit(runs, layout_.dp(), kBucketBytes));
    }
    stage.uses = schedule_.uses;
    stage.first_input_has_gradient = !model_->stage().has_embedding;
    return stage;
  }

  const ZeroLayout& layout() const { return layout_; }
  int64_t gathers() const { return gathers_; }
  int64_t peak_bytes() const { return gatherer_->peak_bytes(); }

 private:
  static ParallelDims world_dims() {
    ParallelDims d;
    d.dp = testing::world_size();
    d.zero_stage = 3;
    return d;
  }

  // As the ZeRO optimizer lays them out: the untied token embedding in
  // buckets of its own (its gradient is sparse).
  std::vector<FlatParam> flat_params() const {
    std::vector<FlatParam> flat;
    for (const auto& p : params_) {
      FlatParam f;
      f.name = p.name;
      f.numel = size_t(p.tensor.numel());
      f.own_buckets = !model_->options().tie_embeddings && p.name == "token_embedding.weight";
      flat.push_back(f);
    }
    return flat;
  }

  // One micro-batch through the stage: token ids into the embedding stage,
  // a hidden state with a gradient into any other; a loss out of the head
  // stage, a scalar of the output otherwise.
  torch::Tensor forward() {
    const auto& stage = model_->stage();
    const auto tokens = torch::randint(model_->options().vocab_size, {kBatch, kTime}, torch::kLong);
    auto x = stage.has_embedding
                 ? model_->embed(tokens)
                 : torch::randn({kBatch, kTime, model_->options().hidden}).requires_grad_(true);
    x = model_->run_blocks(x);
    return stage.has_head ? model_->head_loss(x, tokens) : x.square().mean();
  }

  ProcessGroups alone_, world_;
  models::Gpt model_;
  std::vector<ParamInfo> params_;
  std::vector<std::vector<int64_t>> shapes_;
  LayerSchedule schedule_;
  ZeroLayout layout_;
  std::vector<float> shard_;
  OrderedCommQueue queue_;
  std::unique_ptr<LayerParameterGatherer> gatherer_;
  int64_t gathers_ = 0;
};

std::vector<Stage> stages() {
  models::StagePlan middle;
  middle.first_layer = 1;
  middle.end_layer = 3;
  middle.has_embedding = false;
  middle.has_head = false;
  models::StagePlan head_only;
  head_only.first_layer = 3;
  head_only.has_embedding = false;
  return {{"whole model, tied", true, {}},
          {"whole model, untied", false, {}},
          {"middle stage", true, middle},
          {"head-only stage, tied", true, head_only}};
}

std::string describe(const std::vector<StagePass>& passes) {
  std::string out;
  for (StagePass p : passes)
    out += p == StagePass::kForward ? 'F' : p == StagePass::kBackward ? 'B' : 'E';
  return out;
}

TEST(Zero3GatherPlan, PlannerCountsTheGatherersGathersAndPeak) {
  constexpr auto F = StagePass::kForward, B = StagePass::kBackward, E = StagePass::kEval;
  const std::vector<std::vector<StagePass>> schedules = {
      {F, B, F, B},     // 1F1B on one stage, two micro-batches
      {F, F, B, B},     // GPipe
      {E, E},           // evaluation
      {F, B, E, F, B},  // evaluation between micro-batches
      {E, F, F, B, E, B},
  };
  for (const Stage& stage : stages()) {
    for (const auto& passes : schedules) {
      const std::string what = stage.name + ", passes " + describe(passes);
      GatheredStage gathered(stage);
      gathered.run(passes);
      plan::StageUnits planned = gathered.planned_units();
      ASSERT_EQ(planned.units.size(), gathered.layout().units().size()) << what;
      for (size_t u = 0; u < planned.units.size(); ++u) {
        const ZeroUnit& unit = gathered.layout().units()[u];
        EXPECT_EQ(planned.units[u].padded_floats(), int64_t(unit.end - unit.start))
            << what << ": unit " << u;
        EXPECT_EQ(planned.units[u].buckets.size(), unit.end_bucket - unit.first_bucket)
            << what << ": unit " << u;
      }
      const int64_t planned_peak = plan::count_gathers(planned, passes);
      int64_t planned_gathers = 0;
      for (const auto& unit : planned.units) planned_gathers += unit.gathers;
      EXPECT_GT(gathered.gathers(), 0) << what;
      EXPECT_EQ(planned_gathers, gathered.gathers()) << what;
      EXPECT_EQ(planned_peak, gathered.peak_bytes()) << what;
    }
  }
}

}  // namespace
}  // namespace cmpi::parallel
