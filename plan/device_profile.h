// What the planner knows of the device a rank runs on (`--plan-device`): the
// datasheet peaks per precision, how much of the peak a GEMM of a given shape
// reaches, the memory's size and bandwidth (which the elementwise kernels
// between the GEMMs are bound by), whether a fused (flash) attention kernel
// runs the attention core, and the device codecs' throughput.
//
// Built in: v100, a100-40gb, a100-80gb, h100, h200 and cpu (the CPU ranks this
// runtime trains on: no table, the plan measures a layer of the model here, as
// before). A user describes another device in a YAML file (the keys are those
// of DeviceProfile; docs/planner.md, "Device and cluster profiles").
//
// Sources (docs/planner.md lists them per figure):
//   peaks, memory     NVIDIA's datasheets (dense, no structured sparsity);
//   GEMM efficiency   A100: fitted on the Megatron-LM rows marked fitted in
//                     docs/planner.md's validation table; the other devices'
//                     curves are the A100's scaled to their large-GEMM
//                     efficiency, an assumption the validation does not reach;
//   codecs            H100: measured (docs/benchmarks.md, "Results on an NVIDIA
//                     H100"); the other GPUs' are the H100's scaled by memory
//                     bandwidth (extrapolated).
#pragma once

#include <string>
#include <vector>

#include "config/config_enums.h"

namespace cmpi::plan {

// A GEMM of `gflop` GFLOP (2 M N K / 1e9; a batched GEMM's whole batch)
// reaches `efficiency` of the peak; between points the efficiency is
// interpolated in log2(gflop), outside them held at the end points. A GEMM's
// work decides how well its tiles fill the device's waves of SMs: a
// [2048 x 2304] x [2304 x 6912] projection of a 1.7B model runs at a smaller
// share of the peak than a [2048 x 25600] x [25600 x 9600] one of a 1T
// model, both far above the roofline's ridge.
struct GemmEfficiencyPoint {
  double gflop = 0;
  double efficiency = 0;
};

// A device codec's throughput, bytes of input floats per second.
struct DeviceCodecSpeed {
  std::string codec;  // the codec's name: zfp, mpc, fp16, bf16, sign
  double encode_bytes_per_s = 0, decode_bytes_per_s = 0;
  bool measured = false;  // false: extrapolated from another device's
};

struct DeviceProfile {
  std::string name;
  std::string source;  // where the figures come from, for the plan's line
  // Dense peak FLOP/s per precision; 0: the device has no such path.
  double peak_fp32 = 0, peak_bf16 = 0, peak_fp16 = 0;
  std::vector<GemmEfficiencyPoint> gemm_efficiency;  // ascending gflop
  double memory_bytes = 0;
  double memory_bytes_per_s = 0;
  // Of memory_bytes_per_s, what the elementwise kernels (norms, bias + GeLU,
  // softmax, dropout, residual adds, the optimizer) achieve.
  double memory_efficiency = 0.9;
  // A fused attention kernel (FlashAttention) runs QK^T, softmax and AV
  // without writing the [seq, seq] scores, at this fraction of the peak.
  bool flash_attention = false;
  double flash_attention_efficiency = 0;
  std::vector<DeviceCodecSpeed> codecs;

  // The CPU: no table; the planner measures a layer of the model here.
  bool measured_here() const { return name == "cpu"; }
  // Throws std::invalid_argument when the device has no such path.
  double peak_for(config::Precision precision) const;
  // A GEMM of `flops` (2 M N K, over its whole batch).
  double gemm_efficiency_at(double flops) const;
  const DeviceCodecSpeed* codec_speed(const std::string& codec) const;
};

// The built-in profiles' names, in the order --help lists them.
std::vector<std::string> builtin_device_names();

// A built-in profile by name (case-insensitive), or a YAML file's. Throws
// std::invalid_argument with one message: an unknown name lists the known
// ones; a file's error names the file, line and key.
DeviceProfile load_device_profile(const std::string& name_or_file);

}  // namespace cmpi::plan
