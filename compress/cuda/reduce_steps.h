// The element-wise sum the device ring reduce-scatter applies after each hop
// (comm/device/device_collectives.h), as a CMPI_HD step: acc[i] = acc[i] +
// x[i], the operand order of the CPU ring (partial sum received + own part;
// IEEE addition is commutative, so only the association, the ring's order,
// decides the bits).
#pragma once

#include <cstdint>

#include "compress/host_device.h"

namespace cmpi::compress::cuda {

struct AddInto {
  float* acc;
  const float* x;
  CMPI_HD void operator()(uint64_t i) const { acc[i] = acc[i] + x[i]; }
};

}  // namespace cmpi::compress::cuda
