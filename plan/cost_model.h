// What a message costs: the link model and the measured codecs.
//
// A link is `bandwidth/latency` ("25gbit/5us", tc's rate units). A group
// whose ranks share one node uses the intra-node link, any other the
// inter-node link, and its ranks on a node share that node's uplink when
// they all send at once (dp and zero traffic; pp sends are staggered). A
// collective's time is its rounds x latency + the bytes this rank sends /
// its share of the bandwidth.
//
// A compressed collective pipelines chunks through encode -> wire -> decode,
// so it takes max(wire time of the compressed bytes, codec time) plus one
// chunk's codec time to fill the pipeline. Codec ratio and throughput are
// measured here, once per codec spec, on gradient-like data (Laplace
// distributed, scale 1e-3, 4 MiB, fixed seed) on one core, times the
// codec_scale the user gives (cores per rank, or a GPU codec's speed-up).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "plan/device_profile.h"

namespace cmpi::compress {
class CodecSpec;
}

namespace cmpi::plan {

struct Link {
  double bits_per_second = 25e9;
  double latency_seconds = 5e-6;
  // "25gbit/5us", "200mbit/1ms", "1gbit" (latency 0); throws
  // std::invalid_argument naming `what` and the text.
  static Link parse(const std::string& text, const std::string& what);
  std::string to_string() const;
};

struct CodecCost {
  double ratio = 1;                  // compressed bytes / raw bytes
  double encode_bytes_per_s = 1e12;  // raw bytes per second
  double decode_bytes_per_s = 1e12;
  double rel_error = 0;  // ||D(C(x)) - x|| / ||x|| on the probe's data
};

class CodecCostTable {
 public:
  explicit CodecCostTable(double codec_scale = 1.0) : codec_scale_(codec_scale) {}
  // A device's codec speeds (plan/device_profile.h) replace the measured
  // speeds x codec_scale for the codecs they name; ratio and error, which
  // the data decides, stay measured here (the device codecs' payloads are
  // the CPU codecs' bytes).
  CodecCostTable(double codec_scale, std::vector<DeviceCodecSpeed> device_speeds)
      : codec_scale_(codec_scale), device_speeds_(std::move(device_speeds)) {}
  // Measured on first use, then cached by the spec's text.
  const CodecCost& cost(const compress::CodecSpec& spec);

 private:
  double codec_scale_;
  std::vector<DeviceCodecSpeed> device_speeds_;
  std::map<std::string, CodecCost> measured_;
};

}  // namespace cmpi::plan
