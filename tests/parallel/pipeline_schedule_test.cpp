// Pipeline stage partition and schedules, without MPI or torch: the layer
// split a user configures, the per-stage action lists, and a simulation of
// all stages exchanging activations and gradients over FIFO channels (sends
// never wait, receives block) that must run every list to its end.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>

#include "parallel/pipeline/pipeline_schedule.h"
#include "parallel/pipeline/pipeline_stages.h"

namespace cmpi::parallel {
namespace {

using Kind = PipelineAction::Kind;

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(PipelineStages, BalancedCountsDifferByAtMostOneAndCoverTheModel) {
  for (int64_t stages = 1; stages <= 8; ++stages) {
    for (int64_t layers = stages; layers <= 3 * stages + 2; ++layers) {
      const auto plan = partition_layers(layers, stages);
      ASSERT_EQ(int64_t(plan.size()), stages);
      int64_t next = 0, fewest = layers, most = 0;
      for (size_t s = 0; s < plan.size(); ++s) {
        EXPECT_EQ(plan[s].first_layer, next) << layers << " layers, stage " << s;
        next = plan[s].end_layer;
        fewest = std::min(fewest, plan[s].layers());
        most = std::max(most, plan[s].layers());
        EXPECT_EQ(plan[s].has_embedding, s == 0);
        EXPECT_EQ(plan[s].has_head, s + 1 == plan.size());
      }
      EXPECT_EQ(next, layers);
      EXPECT_GE(fewest, 1);
      EXPECT_LE(most - fewest, 1) << layers << " layers over " << stages << " stages";
    }
  }
}

TEST(PipelineStages, ExtraLayersGoToTheEarlyStages) {
  EXPECT_EQ(balanced_stage_layers(5, 2), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(balanced_stage_layers(7, 4), (std::vector<int64_t>{2, 2, 2, 1}));
  EXPECT_EQ(balanced_stage_layers(4, 4), (std::vector<int64_t>{1, 1, 1, 1}));
}

TEST(PipelineStages, SingleStageHoldsEverything) {
  const auto only = stage_of(6, 1, 0);
  EXPECT_EQ(only.first_layer, 0);
  EXPECT_EQ(only.end_layer, 6);
  EXPECT_TRUE(only.has_embedding);
  EXPECT_TRUE(only.has_head);
}

TEST(PipelineStages, ExplicitCountsAreUsedAsGiven) {
  const auto plan = partition_layers(5, 4, {2, 1, 1, 1});
  EXPECT_EQ(plan[0].first_layer, 0);
  EXPECT_EQ(plan[0].end_layer, 2);
  EXPECT_EQ(plan[1].first_layer, 2);
  EXPECT_EQ(plan[3].first_layer, 4);
  EXPECT_EQ(plan[3].end_layer, 5);
  const auto last = stage_of(4, 2, 1, {3, 1});
  EXPECT_EQ(last.first_layer, 3);
  EXPECT_EQ(last.end_layer, 4);
  EXPECT_FALSE(last.has_embedding);
  EXPECT_TRUE(last.has_head);
}

TEST(PipelineStages, BadCountsNameTheKey) {
  const auto wrong_sum = message_of([] { partition_layers(4, 2, {2, 1}); });
  EXPECT_NE(wrong_sum.find("parallel.stage_layers [2, 1]"), std::string::npos) << wrong_sum;
  EXPECT_NE(wrong_sum.find("sum to 3"), std::string::npos) << wrong_sum;
  EXPECT_NE(wrong_sum.find("model.layers is 4"), std::string::npos) << wrong_sum;

  const auto empty_stage = message_of([] { partition_layers(4, 3, {2, 0, 2}); });
  EXPECT_NE(empty_stage.find("parallel.stage_layers"), std::string::npos) << empty_stage;
  EXPECT_NE(empty_stage.find("stage 1 gets 0 layers"), std::string::npos) << empty_stage;

  const auto wrong_length = message_of([] { partition_layers(4, 2, {1, 1, 2}); });
  EXPECT_NE(wrong_length.find("lists 3 stages, parallel.pipeline is 2"), std::string::npos)
      << wrong_length;

  const auto too_few_layers = message_of([] { partition_layers(2, 3); });
  EXPECT_NE(too_few_layers.find("parallel.pipeline"), std::string::npos) << too_few_layers;
  const auto no_such_stage = message_of([] { stage_of(4, 2, 2); });
  EXPECT_NE(no_such_stage.find("stage 2"), std::string::npos) << no_such_stage;
}

std::vector<std::unique_ptr<PipelineSchedule>> all_schedules() {
  std::vector<std::unique_ptr<PipelineSchedule>> all;
  all.push_back(make_pipeline_schedule("gpipe"));
  all.push_back(make_pipeline_schedule("1f1b"));
  return all;
}

TEST(PipelineSchedule, EveryMicroBatchIsForwardedThenBackwardedOnce) {
  for (const auto& schedule : all_schedules())
    for (int64_t stages = 1; stages <= 6; ++stages)
      for (int64_t stage = 0; stage < stages; ++stage)
        for (int64_t micro = 1; micro <= 9; ++micro) {
          const auto list = schedule->actions(stage, stages, micro);
          ASSERT_EQ(int64_t(list.size()), 2 * micro);
          std::map<int64_t, int> forwards, backwards;
          for (const auto& a : list) {
            ASSERT_GE(a.micro_batch, 0);
            ASSERT_LT(a.micro_batch, micro);
            if (a.kind == Kind::kForward) {
              ++forwards[a.micro_batch];
            } else {
              EXPECT_EQ(forwards[a.micro_batch], 1)
                  << schedule->name() << ": backward before forward of " << a.micro_batch;
              ++backwards[a.micro_batch];
            }
          }
          for (int64_t m = 0; m < micro; ++m) {
            EXPECT_EQ(forwards[m], 1) << schedule->name() << " micro-batch " << m;
            EXPECT_EQ(backwards[m], 1) << schedule->name() << " micro-batch " << m;
          }
        }
}

TEST(PipelineSchedule, GpipeRunsAllForwardsFirst) {
  const auto list = GpipeSchedule().actions(1, 3, 3);
  const std::vector<PipelineAction> expected = {{Kind::kForward, 0},  {Kind::kForward, 1},
                                                {Kind::kForward, 2},  {Kind::kBackward, 0},
                                                {Kind::kBackward, 1}, {Kind::kBackward, 2}};
  EXPECT_EQ(list, expected);
  EXPECT_EQ(max_in_flight(list), 3);
}

TEST(PipelineSchedule, OneForwardOneBackwardWarmsUpThenAlternates) {
  const OneForwardOneBackwardSchedule schedule;
  // Stage 0 of 3: two warm-up forwards, then F/B pairs, then two backwards.
  const std::vector<PipelineAction> first = {
      {Kind::kForward, 0}, {Kind::kForward, 1},  {Kind::kForward, 2},  {Kind::kBackward, 0},
      {Kind::kForward, 3}, {Kind::kBackward, 1}, {Kind::kBackward, 2}, {Kind::kBackward, 3}};
  EXPECT_EQ(schedule.actions(0, 3, 4), first);
  // The last stage runs each backward right after its forward.
  const std::vector<PipelineAction> last = {
      {Kind::kForward, 0}, {Kind::kBackward, 0}, {Kind::kForward, 1}, {Kind::kBackward, 1}};
  EXPECT_EQ(schedule.actions(2, 3, 2), last);
  // Fewer micro-batches than the warm-up wants: all forwards, then all backwards.
  const std::vector<PipelineAction> short_step = {{Kind::kForward, 0}, {Kind::kBackward, 0}};
  EXPECT_EQ(schedule.actions(0, 4, 1), short_step);
}

TEST(PipelineSchedule, OneForwardOneBackwardBoundsInFlightMicroBatches) {
  const OneForwardOneBackwardSchedule schedule;
  for (int64_t stages = 1; stages <= 6; ++stages)
    for (int64_t stage = 0; stage < stages; ++stage)
      for (int64_t micro = 1; micro <= 12; ++micro) {
        const int64_t most = max_in_flight(schedule.actions(stage, stages, micro));
        EXPECT_LE(most, stages - stage) << "stage " << stage << " of " << stages;
        EXPECT_EQ(most, std::min(stages - stage, micro)) << "stage " << stage << " of " << stages;
      }
}

// Runs every stage's list against FIFO channels: forward m on stage s > 0
// receives stage s-1's next activation, backward m on stage s < P-1 receives
// stage s+1's next gradient; a receive whose message has not been sent yet
// blocks. With `retire_gradient_sends` a stage also waits, in its next action
// after that action's receive (and at the end of its list), until the
// gradient it last sent back has been received, as PipelineEngine does to
// free it. Returns "" when every list ran to its end with every message
// matching its micro-batch, else what went wrong.
std::string simulate(const PipelineSchedule& schedule, int64_t stages, int64_t micro,
                     bool retire_gradient_sends = false) {
  std::vector<std::vector<PipelineAction>> lists;
  for (int64_t s = 0; s < stages; ++s) lists.push_back(schedule.actions(s, stages, micro));
  const size_t count = static_cast<size_t>(stages);
  std::vector<size_t> next(count, 0);
  std::vector<bool> received(count, false);   // this action's receive is done
  std::vector<int64_t> unretired(count, -1);  // the gradient sent back, not yet taken
  std::vector<std::deque<int64_t>> activations(count), gradients(count);
  // Whether stage s's last gradient send has been taken by stage s - 1.
  const auto taken = [&](int64_t s) {
    if (unretired[size_t(s)] < 0) return true;
    const auto& inbox = gradients[size_t(s - 1)];
    return std::find(inbox.begin(), inbox.end(), unretired[size_t(s)]) == inbox.end();
  };
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (int64_t s = 0; s < stages; ++s) {
      if (next[size_t(s)] == lists[size_t(s)].size()) {
        if (unretired[size_t(s)] >= 0 && taken(s)) {
          unretired[size_t(s)] = -1;
          progressed = true;
        }
        continue;
      }
      const PipelineAction& a = lists[size_t(s)][next[size_t(s)]];
      const bool forward = a.kind == Kind::kForward;
      const bool receives = forward ? s > 0 : s + 1 < stages;
      auto& inbox = forward ? activations[size_t(s)] : gradients[size_t(s)];
      if (receives && !received[size_t(s)]) {
        if (inbox.empty()) continue;  // blocked
        if (inbox.front() != a.micro_batch)
          return "stage " + std::to_string(s) + " expected micro-batch " +
                 std::to_string(a.micro_batch) + ", got " + std::to_string(inbox.front());
        inbox.pop_front();
        received[size_t(s)] = true;
        progressed = true;
      }
      if (!taken(s)) continue;  // blocked on the previous gradient send
      unretired[size_t(s)] = -1;
      if (forward && s + 1 < stages) activations[size_t(s + 1)].push_back(a.micro_batch);
      if (!forward && s > 0) {
        gradients[size_t(s - 1)].push_back(a.micro_batch);
        if (retire_gradient_sends) unretired[size_t(s)] = a.micro_batch;
      }
      received[size_t(s)] = false;
      ++next[size_t(s)];
      progressed = true;
    }
  }
  for (int64_t s = 0; s < stages; ++s)
    if (next[size_t(s)] != lists[size_t(s)].size() || unretired[size_t(s)] >= 0)
      return "deadlock: stage " + std::to_string(s) + " stuck at action " +
             std::to_string(next[size_t(s)]);
  return "";
}

TEST(PipelineSchedule, StagesNeverDeadlockAndMessagesArriveInOrder) {
  for (const auto& schedule : all_schedules())
    for (int64_t stages = 1; stages <= 6; ++stages)
      for (int64_t micro = 1; micro <= 10; ++micro)
        EXPECT_EQ(simulate(*schedule, stages, micro), "")
            << schedule->name() << ", " << stages << " stages, " << micro << " micro-batches";
}

// The engine waits for each input-gradient send in the stage's next action
// (to free it): no schedule can stall on that wait.
TEST(PipelineSchedule, WaitingForEachGradientSendInTheNextActionNeverDeadlocks) {
  for (const auto& schedule : all_schedules())
    for (int64_t stages = 1; stages <= 6; ++stages)
      for (int64_t micro = 1; micro <= 10; ++micro)
        EXPECT_EQ(simulate(*schedule, stages, micro, /*retire_gradient_sends=*/true), "")
            << schedule->name() << ", " << stages << " stages, " << micro << " micro-batches";
}

TEST(PipelineSchedule, RejectsBadArgumentsAndUnknownNames) {
  EXPECT_THROW(GpipeSchedule().actions(0, 0, 1), std::invalid_argument);
  EXPECT_THROW(GpipeSchedule().actions(2, 2, 1), std::invalid_argument);
  EXPECT_THROW(OneForwardOneBackwardSchedule().actions(0, 2, 0), std::invalid_argument);
  const auto unknown = message_of([] { make_pipeline_schedule("interleaved"); });
  EXPECT_NE(unknown.find("parallel.schedule"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("gpipe, 1f1b"), std::string::npos) << unknown;
  EXPECT_EQ(make_pipeline_schedule("gpipe")->name(), "gpipe");
  EXPECT_EQ(make_pipeline_schedule("1f1b")->name(), "1f1b");
}

}  // namespace
}  // namespace cmpi::parallel
