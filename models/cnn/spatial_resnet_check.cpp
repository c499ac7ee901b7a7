#include "models/cnn/spatial_resnet_check.h"

#include <string>

namespace cmpi::models {
namespace {

using parallel::spatial::GeometryError;
using parallel::spatial::Slicing;
using parallel::spatial::TileGrid;
using parallel::spatial::Window;
using parallel::spatial::WindowPlan;

std::string layer_name(const std::vector<CnnLayerSpec>& plan, int64_t i) {
  const char* kind = plan[size_t(i)].kind == CnnLayerSpec::Kind::kStem         ? "stem"
                     : plan[size_t(i)].kind == CnnLayerSpec::Kind::kBottleneck ? "bottleneck"
                                                                               : "head";
  return std::to_string(i) + " (" + kind + ")";
}

void check_window(const TileGrid& input, int64_t kernel, int64_t stride, int64_t padding,
                  const std::string& layer) {
  Window window;
  window.kernel = kernel;
  window.stride = stride;
  window.padding = padding;
  WindowPlan(input, window, layer);
}

}  // namespace

void check_spatial_resnet_layers(const std::vector<CnnLayerSpec>& plan, int64_t first, int64_t end,
                                 int sp, Slicing slicing) {
  for (int64_t i = first; i < end; ++i) {
    const CnnLayerSpec& spec = plan[size_t(i)];
    const std::string name = layer_name(plan, i);
    try {
      const TileGrid input(spec.in_size, spec.in_size, sp, slicing, "input of layer " + name);
      if (spec.kind == CnnLayerSpec::Kind::kStem) {
        check_window(input, 3, 1, 1, name + " conv");
      } else if (spec.kind == CnnLayerSpec::Kind::kBottleneck) {
        check_window(input, 1, 1, 0, name + " conv1");
        check_window(input, 3, spec.stride, 1, name + " conv2");
        const TileGrid output(spec.out_size, spec.out_size, sp, slicing, "output of layer " + name);
        check_window(output, 1, 1, 0, name + " conv3");
        if (spec.stride != 1 || spec.in_channels != spec.out_channels)
          check_window(input, 1, spec.stride, 0, name + " projection");
      }
    } catch (const GeometryError& e) {
      throw GeometryError(std::string(e.what()) + " [" + std::to_string(sp) +
                          " tiles: " + "parallel.spatial " + std::to_string(sp) +
                          ", parallel.spatial_slicing " + parallel::spatial::to_string(slicing) +
                          ", model.image_size " + std::to_string(plan.front().in_size) + "]");
    }
  }
}

}  // namespace cmpi::models
