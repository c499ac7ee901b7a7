// The replay is a set of alive units that Zero3GatherRules acts on: a unit
// counts a gather each time it goes from released to requested, and the
// bytes of alive units are summed as they change. A pass walks the uses as
// a model's forward and autograd call the gate (parallel/zero/layer_gate_ops.h):
// forward u = 0..n-1, before_forward then after_forward; backward
// u = n-1..0, before_backward then after_backward, except that the first
// use's after_backward never comes when its input has no gradient.
#include "plan/layer_gathers.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "parallel/zero/zero3_gather_rules.h"
#include "parallel/zero/zero_layout.h"

namespace cmpi::plan {
namespace {

class GatherReplay final : public parallel::UnitGatherer {
 public:
  explicit GatherReplay(std::vector<GatherUnit>& units)
      : units_(units), alive_(units.size(), false) {}

  void gather(size_t unit) override { prefetch(unit); }
  void prefetch(size_t unit) override {
    if (alive_[unit]) return;
    alive_[unit] = true;
    ++units_[unit].gathers;
    live_bytes_ += units_[unit].padded_floats() * int64_t(sizeof(float));
    peak_bytes_ = std::max(peak_bytes_, live_bytes_);
  }
  void release(size_t unit) override {
    if (!alive_[unit]) return;
    alive_[unit] = false;
    live_bytes_ -= units_[unit].padded_floats() * int64_t(sizeof(float));
  }
  int64_t peak_bytes() const { return peak_bytes_; }

 private:
  std::vector<GatherUnit>& units_;
  std::vector<bool> alive_;
  int64_t live_bytes_ = 0;
  int64_t peak_bytes_ = 0;
};

}  // namespace

int64_t GatherUnit::padded_floats() const {
  return std::accumulate(buckets.begin(), buckets.end(), int64_t(0),
                         [](int64_t sum, const GatherBucket& b) { return sum + b.floats; });
}

GatherUnit zero_unit(const std::vector<ParameterRun>& runs, int dp, int64_t bucket_bytes) {
  GatherUnit unit;
  std::vector<parallel::FlatParam> params;
  for (const ParameterRun& run : runs) {
    unit.elements += run.elements;
    if (run.elements <= 0) continue;
    parallel::FlatParam p;
    p.name = "run " + std::to_string(params.size());
    p.numel = size_t(run.elements);
    p.own_buckets = run.own;
    p.tied_copy = run.tied;
    p.exact = run.exact;
    params.push_back(p);
  }
  if (params.empty()) return unit;
  const parallel::ZeroLayout layout(std::move(params), dp, 0, bucket_bytes);
  for (const parallel::ZeroBucket& b : layout.buckets())
    unit.buckets.push_back({int64_t(b.piece) * dp, b.own, b.tied});
  return unit;
}

int64_t count_gathers(StageUnits& stage, const std::vector<StagePass>& passes) {
  const parallel::Zero3GatherRules rules(stage.uses, stage.units.size());
  GatherReplay replay(stage.units);
  const size_t n = rules.use_count();
  for (StagePass pass : passes) {
    if (pass == StagePass::kBackward) {
      for (size_t u = n; u-- > 0;) {
        rules.before_backward(u, replay);
        if (u > 0 || stage.first_input_has_gradient) rules.after_backward(u, replay);
      }
      continue;
    }
    for (size_t u = 0; u < n; ++u) {
      rules.before_forward(u, replay);
      rules.after_forward(u, pass == StagePass::kForward, replay);
    }
  }
  return replay.peak_bytes();
}

}  // namespace cmpi::plan
