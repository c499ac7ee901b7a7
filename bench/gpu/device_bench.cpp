// Device benchmarks (device_bench.h). Throughput is raw float bytes over the
// wall time of `reps` back-to-back encodes (or decodes) queued on one stream
// and synchronized once, after one warm-up. Every codec's device payload is
// compared with the CPU codec's bytes before it is timed, so a figure is
// never reported for a wrong payload. Collectives: median over reps of the
// slowest rank's time, with a barrier before each.
#include "bench/gpu/device_bench.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/device/device_collectives.h"
#include "compress/codec_registry.h"
#include "compress/cuda/device_codec.h"
#include "compress/cuda/fake_device.h"
#ifdef CMPI_HAVE_CUDA
#include "compress/cuda/cuda_device.h"
#endif

namespace cmpi::bench {
namespace {

using compress::CodecSpec;
using compress::cuda::Device;
using compress::cuda::DeviceBuffer;
using compress::cuda::PinnedBuffer;
using compress::cuda::StreamId;
using Clock = std::chrono::steady_clock;

struct DeviceOptions {
  std::string device = "cuda";
  bool quick = false;
  uint64_t mib = 256;
  int reps = 10;
  std::vector<std::string> codecs = {"zfp:rate=8", "zfp:rate=16",    "mpc", "mpc:dim=auto", "fp16",
                                     "bf16",       "sign:bucket=512"};
  int streams = 4;
  uint64_t chunk_floats = uint64_t{1} << 20;
};

DeviceOptions parse(int argc, char** argv) {
  DeviceOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--device")
      o.device = value();
    else if (a == "--quick")
      o.quick = true, o.mib = 4, o.reps = 2;
    else if (a == "--mib")
      o.mib = std::stoull(value());
    else if (a == "--reps")
      o.reps = std::stoi(value());
    else if (a == "--codec")
      o.codecs = {value()};
    else if (a == "--streams")
      o.streams = std::stoi(value());
    else if (a == "--chunk")
      o.chunk_floats = std::stoull(value());
    else
      throw std::invalid_argument("unknown option '" + a + "' with --device");
  }
  return o;
}

std::unique_ptr<Device> open_device(const std::string& name, int rank) {
  if (name == "fake") return std::make_unique<compress::cuda::FakeDevice>(uint64_t(rank) + 1);
#ifdef CMPI_HAVE_CUDA
  if (name == "cuda") {
    const int count = compress::cuda::cuda_device_count();
    if (count == 0) throw std::runtime_error(compress::cuda::cuda_unavailable_reason());
    return compress::cuda::make_cuda_device(rank % count);  // ranks may share a GPU
  }
  throw std::invalid_argument("--device must be cuda or fake, got '" + name + "'");
#else
  throw std::invalid_argument("--device " + name +
                              ": this cmpi-bench was built without CMPI_CUDA (only --device fake)");
#endif
}

std::vector<float> gaussian(uint64_t n) {
  std::mt19937_64 rng(12345);
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng);
  return v;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

const char* device_option(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--device")) return argv[i + 1];
  return nullptr;
}

int run_device_codec_bench(int argc, char** argv) {
  const DeviceOptions o = parse(argc, argv);
  auto device = open_device(o.device, 0);
  const uint64_t n = o.mib * (uint64_t{1} << 20) / 4;
  const std::vector<float> x = gaussian(n);
  const StreamId stream = device->create_stream();
  DeviceBuffer in(*device, 4 * n), out(*device, 4 * n), word(*device, 8);
  PinnedBuffer host(*device, 4 * n + 8);
  std::memcpy(host.as(), x.data(), 4 * n);
  device->copy_to_device(in.as(), host.as(), 4 * n, stream);
  std::printf("device: %s\n", device->description().c_str());
  std::printf("%-20s %8s %12s %12s %8s %s\n", "codec", "MiB", "encode_GB/s", "decode_GB/s", "ratio",
              "payload");
  for (const std::string& text : o.codecs) {
    const CodecSpec spec = CodecSpec::parse(text);
    auto codec = device->make_codec(spec);
    DeviceBuffer payload(*device, codec->max_payload_bytes(n));
    codec->encode(in.as<float>(), n, payload.as(), word.as<uint64_t>(), stream);
    device->copy_to_host(host.as(), word.as(), 8, stream);
    device->synchronize_stream(stream);
    uint64_t size = 0;
    std::memcpy(&size, host.as(), 8);
    // The payload must be the CPU codec's, byte for byte.
    const std::vector<uint8_t> expected = compress::make_codec(spec)->encode(x.data(), n);
    std::vector<uint8_t> got(size);
    device->copy_to_host(host.as(), payload.as(), size, stream);
    device->synchronize_stream(stream);
    std::memcpy(got.data(), host.as(), size);
    const bool same = got == expected;

    auto start = Clock::now();
    for (int r = 0; r < o.reps; ++r)
      codec->encode(in.as<float>(), n, payload.as(), word.as<uint64_t>(), stream);
    device->synchronize_stream(stream);
    const double encode_s = seconds_since(start) / o.reps;
    codec->decode(payload.as(), size, out.as<float>(), n, word.as<uint32_t>(), stream);
    device->synchronize_stream(stream);
    start = Clock::now();
    for (int r = 0; r < o.reps; ++r)
      codec->decode(payload.as(), size, out.as<float>(), n, word.as<uint32_t>(), stream);
    device->synchronize_stream(stream);
    const double decode_s = seconds_since(start) / o.reps;
    std::printf("%-20s %8llu %12.1f %12.1f %8.2f %s\n", text.c_str(),
                static_cast<unsigned long long>(o.mib), 4.0 * n / encode_s / 1e9,
                4.0 * n / decode_s / 1e9, 4.0 * n / double(size),
                same ? "equals CPU codec" : "DIFFERS FROM CPU CODEC");
    if (!same) return 1;
  }
  return 0;
}

int run_device_collective_bench(int argc, char** argv) {
  DeviceOptions o = parse(argc, argv);
  if (o.quick) o.codecs = {"zfp:rate=16"};
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int status = 0;
  try {
    auto device = open_device(o.device, rank);
    const StreamId caller = device->create_stream();
    const uint64_t per_rank = o.mib * (uint64_t{1} << 20) / 4 / uint64_t(size);
    const std::vector<float> x = gaussian(per_rank * uint64_t(size));
    DeviceBuffer in(*device, 4 * per_rank * size), out(*device, 4 * per_rank * size);
    PinnedBuffer host(*device, 4 * per_rank * size);
    std::memcpy(host.as(), x.data(), 4 * x.size());
    device->copy_to_device(in.as(), host.as(), 4 * x.size(), caller);
    device->synchronize_stream(caller);
    comm::device::MpiTransport transport(MPI_COMM_WORLD, 7001);
    const std::vector<uint64_t> counts(size_t(size), per_rank);
    if (rank == 0) {
      std::printf("device: %s, %d ranks\n", device->description().c_str(), size);
      std::printf("%-14s %-20s %10s %12s\n", "op", "codec", "MiB/rank", "median_ms");
    }
    std::vector<std::string> variants = {""};
    variants.insert(variants.end(), o.codecs.begin(), o.codecs.end());
    for (const char* op : {"allgather", "alltoall", "reduce_scatter", "allreduce", "broadcast"}) {
      for (const std::string& text : variants) {
        const CodecSpec spec = text.empty() ? CodecSpec() : CodecSpec::parse(text);
        comm::device::DeviceCollectives collectives(
            *device, transport, text.empty() ? nullptr : &spec, {o.streams, o.chunk_floats});
        std::vector<double> times;
        for (int r = 0; r < o.reps + 1; ++r) {
          device->copy_on_device(out.as(), in.as(), 4 * per_rank, caller);
          device->synchronize_stream(caller);
          MPI_Barrier(MPI_COMM_WORLD);
          const auto start = Clock::now();
          // reduce_scatter: size * per_rank floats in, per_rank out;
          // allreduce and broadcast: per_rank floats in place in `out`,
          // refilled from `in` before the barrier.
          if (!std::strcmp(op, "allgather"))
            collectives.allgather(in.as<float>(), out.as<float>(), counts, caller);
          else if (!std::strcmp(op, "alltoall"))
            collectives.alltoall(in.as<float>(), counts, out.as<float>(), counts, caller);
          else if (!std::strcmp(op, "reduce_scatter"))
            collectives.reduce_scatter(in.as<float>(), out.as<float>(), counts, caller);
          else if (!std::strcmp(op, "allreduce"))
            collectives.allreduce(out.as<float>(), per_rank, caller);
          else
            collectives.broadcast(out.as<float>(), per_rank, 0, caller);
          device->synchronize_stream(caller);
          double t = seconds_since(start), slowest = 0;
          MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
          if (r > 0) times.push_back(slowest);  // the first is a warm-up
        }
        std::sort(times.begin(), times.end());
        if (rank == 0)
          std::printf("%-14s %-20s %10.2f %12.3f\n", op,
                      text.empty() ? "plain (staged)" : text.c_str(), 4.0 * per_rank / (1 << 20),
                      1e3 * times[times.size() / 2]);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    status = 1;
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}

}  // namespace cmpi::bench
