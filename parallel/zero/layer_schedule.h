// LayerSchedule and LayerGate: how a model tells per-layer ZeRO-3 which
// parameters to gather when (torch-free).
//
// A unit is a contiguous run of the model's parameters (registration order)
// that is gathered and freed together: the embedding, each transformer
// block, the head. A use is one piece of forward (the embedding lookup, one
// block, the head and loss) and names the units it reads: the head's use
// also reads the embedding unit when the output head is tied to it. Uses are
// numbered in forward order; backward runs them in reverse.
//
// The model calls the gate around every use: before_forward(u) returns with
// the use's units materialised, after_forward(u) says forward is done with
// them; backward calls before_backward(u) before the first gradient of the
// use is computed and after_backward(u) once its input's gradient is (every
// node reading the use's weights has run by then). A gate may prefetch the
// neighbouring use meanwhile. Forward without gradients calls only the first
// two.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace cmpi::parallel {

struct LayerSchedule {
  // Unit u holds parameters [u == 0 ? 0 : unit_ends[u-1], unit_ends[u]); the
  // last entry is the parameter count.
  std::vector<size_t> unit_ends;
  std::vector<std::string> unit_names;    // for errors and metrics
  std::vector<std::vector<size_t>> uses;  // the units each use reads, forward order

  size_t unit_begin(size_t unit) const { return unit == 0 ? 0 : unit_ends[unit - 1]; }
  bool empty() const { return unit_ends.empty(); }
};

class LayerGate {
 public:
  virtual ~LayerGate() = default;
  virtual void before_forward(size_t use) = 0;
  virtual void after_forward(size_t use) = 0;
  virtual void before_backward(size_t use) = 0;
  virtual void after_backward(size_t use) = 0;
};

}  // namespace cmpi::parallel
