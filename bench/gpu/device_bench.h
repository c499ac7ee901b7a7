// `cmpi-bench codec --device cuda|fake` and `cmpi-bench collective --device
// cuda|fake`: the device codecs' encode/decode throughput and the staged
// device collectives' latency, plain against compressed. `fake` runs the same
// code on a FakeDevice (host memory), which the CPU smoke test uses; `cuda`
// needs a build with CMPI_CUDA and a GPU.
#pragma once

namespace cmpi::bench {

// argv[0] is the subcommand; returns the exit status.
int run_device_codec_bench(int argc, char** argv);
int run_device_collective_bench(int argc, char** argv);

// The value of --device in argv, or nullptr.
const char* device_option(int argc, char** argv);

}  // namespace cmpi::bench
