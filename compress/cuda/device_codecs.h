// The factory of device codecs for any Executor (fake_device.h,
// cuda_executor.cuh): the spec's name picks the codec.
#pragma once

#include <memory>

#include "compress/cuda/device_zfp_codec.h"

namespace cmpi::compress::cuda {

template <class Executor>
std::unique_ptr<DeviceCodec> make_device_codec(Device& device, Executor executor,
                                               const CodecSpec& spec) {
  if (spec.name() == "zfp")
    return std::make_unique<DeviceZfpCodec<Executor>>(device, executor, spec);
  throw CodecError("codec '" + spec.name() + "' has no device implementation (device codecs: zfp)");
}

}  // namespace cmpi::compress::cuda
