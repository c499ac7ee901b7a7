// The device codecs and the staging pipeline on a CUDA GPU: every codec's
// device payload equals the CPU codec's byte for byte and decodes to the CPU
// decoder's floats bit for bit (so a GPU rank's payload decodes on a CPU rank
// and back), at sizes that fill the device; and two pipelines sharing the
// GPU (a LoopbackNetwork between them) deliver buffers as the CPU codec
// would. Skips, saying why, where no GPU is present.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "comm/device/staging_pipeline.h"
#include "comm/device/transport.h"
#include "compress/codec_registry.h"
#include "compress/cuda/cuda_device.h"
#include "tests/compress/device_codec_test_util.h"
#include "tests/support/float_data.h"
#include "tests/support/test_seed.h"

namespace cmpi::compress::cuda {
namespace {

std::unique_ptr<Device> gpu_or_skip_reason(std::string& reason) {
  if (cuda_device_count() == 0) {
    reason = cuda_unavailable_reason();
    return nullptr;
  }
  return make_cuda_device(0);
}

#define REQUIRE_GPU(device)                      \
  std::string skip_reason;                       \
  auto device = gpu_or_skip_reason(skip_reason); \
  if (!device) GTEST_SKIP() << skip_reason;

class CudaCodecTest : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaCodecTest, PayloadEqualsTheCpuCodecAndDecodesBothWays) {
  REQUIRE_GPU(device);
  const uint64_t seed = cmpi::testing::test_seed();
  const CodecSpec spec = CodecSpec::parse(GetParam());
  auto cpu = make_codec(spec);
  auto codec = device->make_codec(spec);
  const StreamId stream = device->create_stream();
  for (uint64_t n : {uint64_t{1}, uint64_t{4099}, uint64_t{3} << 20}) {
    SCOPED_TRACE(std::string(GetParam()) + ", n " + std::to_string(n) + ", seed " +
                 std::to_string(seed));
    std::vector<float> x = cmpi::testing::gaussian(n, 1.f, seed + n);
    if (n > 100 && spec.name() != "sign") x[77] = std::numeric_limits<float>::quiet_NaN();
    const std::vector<uint8_t> expected = cpu->encode(x.data(), n);
    ASSERT_EQ(testing::device_encode(*device, *codec, x, stream), expected);
    std::vector<float> want(n);
    cpu->decode(expected.data(), expected.size(), want.data(), n);
    uint32_t status = 99;
    const auto got = testing::device_decode(*device, *codec, expected, n, status, stream);
    ASSERT_EQ(status, kDecodeOk);
    ASSERT_EQ(testing::bits_of(got), testing::bits_of(want));
  }
}

INSTANTIATE_TEST_SUITE_P(Codecs, CudaCodecTest,
                         ::testing::Values("zfp:rate=8", "zfp:rate=16", "zfp:rate=5,chunk=1001",
                                           "mpc", "mpc:dim=auto,chunk=4096", "mpc:dim=3,chunk=96",
                                           "fp16", "bf16", "sign:bucket=512"));

TEST(CudaStaging, TwoPipelinesSharingTheGpuDeliverAsTheCpuCodec) {
  REQUIRE_GPU(device);
  const uint64_t seed = cmpi::testing::test_seed();
  for (const char* text : {"", "zfp:rate=16", "mpc:dim=auto"}) {
    SCOPED_TRACE(std::string("codec '") + text + "', seed " + std::to_string(seed));
    const uint64_t n = 1 << 20, chunk = 1 << 16;
    const std::vector<float> x = cmpi::testing::gaussian(n, 1.f, seed);
    const CodecSpec spec = *text ? CodecSpec::parse(text) : CodecSpec();
    auto c0 = *text ? device->make_codec(spec) : nullptr;
    auto c1 = *text ? device->make_codec(spec) : nullptr;
    comm::device::LoopbackNetwork network(2);
    auto t0 = network.endpoint(0), t1 = network.endpoint(1);
    comm::device::StagingPipeline sender(*device, c0.get(), {4, chunk}),
        receiver(*device, c1.get(), {4, chunk});
    const StreamId caller = device->create_stream();
    DeviceBuffer in(*device, 4 * n), out(*device, 4 * n);
    PinnedBuffer host(*device, 4 * n);
    std::memcpy(host.as(), x.data(), 4 * n);
    device->copy_to_device(in.as(), host.as(), 4 * n, caller);
    sender.add_send({1}, in.as<float>(), n);
    receiver.add_recv(0, out.as<float>(), n);
    sender.start(caller), receiver.start(caller);
    for (bool done = false; !done;) {
      const bool sent = sender.progress(*t0);
      done = receiver.progress(*t1) && sent;
    }
    sender.finish(caller), receiver.finish(caller);
    device->copy_to_host(host.as(), out.as(), 4 * n, caller);
    device->synchronize_stream(caller);
    std::vector<float> want = x;
    if (*text) {
      auto cpu = make_codec(spec);
      for (uint64_t first = 0; first < n; first += chunk) {
        const auto payload = cpu->encode(x.data() + first, chunk);
        cpu->decode(payload.data(), payload.size(), want.data() + first, chunk);
      }
    }
    ASSERT_EQ(0, std::memcmp(host.as(), want.data(), 4 * n));
  }
}

}  // namespace
}  // namespace cmpi::compress::cuda
