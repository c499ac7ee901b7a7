// The factory of device codecs for any Executor (fake_device.h,
// cuda_executor.cuh): the spec's name picks the codec.
#pragma once

#include <memory>

#include "compress/cuda/device_cast_codecs.h"
#include "compress/cuda/device_mpc_codec.h"
#include "compress/cuda/device_sign_codec.h"
#include "compress/cuda/device_zfp_codec.h"

namespace cmpi::compress::cuda {

template <class Executor>
std::unique_ptr<DeviceCodec> make_device_codec(Device& device, Executor executor,
                                               const CodecSpec& spec) {
  if (spec.name() == "zfp")
    return std::make_unique<DeviceZfpCodec<Executor>>(device, executor, spec);
  if (spec.name() == "mpc")
    return std::make_unique<DeviceMpcCodec<Executor>>(device, executor, spec);
  if (spec.name() == "fp16" || spec.name() == "bf16")
    return std::make_unique<DeviceCastCodec<Executor>>(executor, spec);
  if (spec.name() == "sign")
    return std::make_unique<DeviceSignCodec<Executor>>(device, executor, spec);
  throw CodecError("codec '" + spec.name() +
                   "' has no device implementation (device codecs: zfp, mpc, fp16, bf16, sign)");
}

}  // namespace cmpi::compress::cuda
