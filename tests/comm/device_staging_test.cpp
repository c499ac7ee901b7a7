// The staging pipeline's host-side state machine (comm/device/
// staging_pipeline.h) on a FakeDevice, two ranks joined by a LoopbackNetwork
// in one process: device buffers arrive bit for bit (plain) or as the CPU
// codec's decode of each chunk (compressed), with the input produced by
// still-queued work on the caller's stream and the output read through the
// caller's stream, under the fake device's adversarial stream order; chunks
// take slots in order and sends post in chunk order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "comm/device/staging_pipeline.h"
#include "comm/device/transport.h"
#include "compress/codec_registry.h"
#include "compress/cuda/fake_device.h"
#include "tests/support/float_data.h"
#include "tests/support/test_seed.h"

namespace cmpi::comm::device {
namespace {

using compress::CodecSpec;
using compress::cuda::DeviceBuffer;
using compress::cuda::FakeDevice;
using compress::cuda::PinnedBuffer;

struct Case {
  const char* codec;  // "" = plain
  uint64_t n;
  uint64_t chunk;
  int streams;
};

// What rank 1 must hold: the floats (plain) or each chunk through the CPU codec.
std::vector<float> expected_result(const Case& c, const std::vector<float>& x) {
  if (std::string(c.codec).empty()) return x;
  auto codec = compress::make_codec(CodecSpec::parse(c.codec));
  std::vector<float> out(x.size());
  for (uint64_t first = 0; first < x.size(); first += c.chunk) {
    const uint64_t len = std::min(c.chunk, x.size() - first);
    const auto payload = codec->encode(x.data() + first, len);
    codec->decode(payload.data(), payload.size(), out.data() + first, len);
  }
  return out;
}

class StagingPipelineTest : public ::testing::TestWithParam<Case> {};

TEST_P(StagingPipelineTest, DeliversDeviceBuffersBetweenTwoRanks) {
  const Case c = GetParam();
  const uint64_t seed = cmpi::testing::test_seed();
  SCOPED_TRACE(std::string("codec '") + c.codec + "', seed " + std::to_string(seed));
  const std::vector<float> x = cmpi::testing::gaussian(c.n, 1.f, seed);
  FakeDevice device(seed);  // both ranks share one device, as two ranks may share a GPU
  LoopbackNetwork network(2);
  auto t0 = network.endpoint(0), t1 = network.endpoint(1);
  const CodecSpec spec = std::string(c.codec).empty() ? CodecSpec() : CodecSpec::parse(c.codec);
  auto codec0 = std::string(c.codec).empty() ? nullptr : device.make_codec(spec);
  auto codec1 = std::string(c.codec).empty() ? nullptr : device.make_codec(spec);
  const StagingOptions options{c.streams, c.chunk};
  StagingPipeline sender(device, codec0.get(), options), receiver(device, codec1.get(), options);
  const auto caller0 = device.create_stream(), caller1 = device.create_stream();

  DeviceBuffer in(device, 4 * c.n), out(device, 4 * c.n);
  PinnedBuffer host(device, 4 * c.n);
  std::memcpy(host.as(), x.data(), 4 * c.n);
  device.copy_to_device(in.as(), host.as(), 4 * c.n, caller0);  // still queued
  sender.add_send({1}, in.as<float>(), c.n);
  receiver.add_recv(0, out.as<float>(), c.n);
  sender.start(caller0), receiver.start(caller1);
  for (bool done = false; !done;) {
    const bool sent = sender.progress(*t0);
    done = receiver.progress(*t1) && sent;
  }
  sender.finish(caller0), receiver.finish(caller1);
  device.fill(in.as(), 0, 4 * c.n, caller0);  // the caller may reuse its input now
  PinnedBuffer result(device, 4 * c.n);
  device.copy_to_host(result.as(), out.as(), 4 * c.n, caller1);
  device.synchronize_stream(caller1);
  device.synchronize_stream(caller0);

  std::vector<float> got(c.n);
  std::memcpy(got.data(), result.as(), 4 * c.n);
  const std::vector<float> want = expected_result(c, x);
  ASSERT_EQ(0, std::memcmp(got.data(), want.data(), 4 * c.n));

  // Slots in order: chunk k is encoded only after chunk k - streams was sent.
  const auto& log = sender.log();
  auto at = [&](const std::string& entry) {
    return std::find(log.begin(), log.end(), entry) - log.begin();
  };
  const uint64_t chunks = (c.n + c.chunk - 1) / c.chunk;
  for (uint64_t k = 0; k < chunks; ++k) {
    ASSERT_LT(at("encode " + std::to_string(k)), at("send " + std::to_string(k) + " -> 1"));
    if (k > 0)
      ASSERT_LT(at("send " + std::to_string(k - 1) + " -> 1"),
                at("send " + std::to_string(k) + " -> 1"));
    if (k >= uint64_t(c.streams))
      ASSERT_LT(at("send " + std::to_string(k - c.streams) + " -> 1"),
                at("encode " + std::to_string(k)));
  }
}

INSTANTIATE_TEST_SUITE_P(Codecs, StagingPipelineTest,
                         ::testing::Values(Case{"", 1000, 64, 3}, Case{"", 5, 64, 2},
                                           Case{"fp16", 999, 100, 3},
                                           Case{"zfp:rate=16,chunk=32", 1000, 128, 4},
                                           Case{"zfp:rate=5,chunk=50", 777, 101, 2},
                                           Case{"sign:bucket=16", 640, 64, 1},
                                           Case{"mpc:dim=auto,chunk=64", 1000, 96, 3}));

// A chain of three ranks: rank 1 relays every chunk it receives from rank 0,
// still compressed, to rank 2, in chunk order and before decoding it, and
// both end with rank 0's chunks as the CPU codec decodes them.
TEST(StagingPipeline, RelayPassesChunksDownAChainUnchanged) {
  const uint64_t seed = cmpi::testing::test_seed();
  for (const char* codec : {"", "mpc:chunk=32", "zfp:rate=8,chunk=32"}) {
    SCOPED_TRACE(std::string("codec '") + codec + "', seed " + std::to_string(seed));
    const Case c{codec, 700, 64, 2};
    const std::vector<float> x = cmpi::testing::gaussian(c.n, 1.f, seed);
    FakeDevice device(seed);
    LoopbackNetwork network(3);
    std::vector<std::unique_ptr<Transport>> transports;
    std::vector<std::unique_ptr<compress::cuda::DeviceCodec>> codecs;
    std::vector<std::unique_ptr<StagingPipeline>> ranks;
    for (int r = 0; r < 3; ++r) {
      transports.push_back(network.endpoint(r));
      codecs.push_back(*codec ? device.make_codec(CodecSpec::parse(codec)) : nullptr);
      ranks.push_back(std::make_unique<StagingPipeline>(device, codecs.back().get(),
                                                        StagingOptions{c.streams, c.chunk}));
    }
    const auto caller = device.create_stream();
    DeviceBuffer in(device, 4 * c.n), out1(device, 4 * c.n), out2(device, 4 * c.n);
    PinnedBuffer host(device, 4 * c.n);
    std::memcpy(host.as(), x.data(), 4 * c.n);
    device.copy_to_device(in.as(), host.as(), 4 * c.n, caller);
    ranks[0]->add_send({1}, in.as<float>(), c.n);
    ranks[1]->add_recv(0, out1.as<float>(), c.n, 2);
    ranks[2]->add_recv(1, out2.as<float>(), c.n);
    for (auto& rank : ranks) rank->start(caller);
    for (bool done = false; !done;) {
      done = true;
      for (int r = 0; r < 3; ++r) done = ranks[size_t(r)]->progress(*transports[size_t(r)]) && done;
    }
    for (auto& rank : ranks) rank->finish(caller);
    const std::vector<float> want = expected_result(c, x);
    for (const DeviceBuffer* out : {&out1, &out2}) {
      PinnedBuffer result(device, 4 * c.n);
      device.copy_to_host(result.as(), out->as(), 4 * c.n, caller);
      device.synchronize_stream(caller);
      ASSERT_EQ(0, std::memcmp(result.as(), want.data(), 4 * c.n));
    }
    const auto& log = ranks[1]->log();
    auto at = [&](const std::string& entry) {
      return std::find(log.begin(), log.end(), entry) - log.begin();
    };
    const uint64_t chunks = (c.n + c.chunk - 1) / c.chunk;
    for (uint64_t k = 0; k < chunks; ++k) {
      ASSERT_LT(at("relay " + std::to_string(k) + " -> 2"), at("decode " + std::to_string(k)));
      if (k > 0)
        ASSERT_LT(at("relay " + std::to_string(k - 1) + " -> 2"),
                  at("relay " + std::to_string(k) + " -> 2"));
    }
  }
}

TEST(StagingPipeline, RefusedPayloadThrowsDecodeError) {
  FakeDevice device(9);
  LoopbackNetwork network(2);
  auto t0 = network.endpoint(0), t1 = network.endpoint(1);
  auto fp16 = device.make_codec(CodecSpec("fp16"));
  auto bf16 = device.make_codec(CodecSpec("bf16"));  // the receiver disagrees on the codec
  StagingPipeline sender(device, fp16.get(), {2, 16}), receiver(device, bf16.get(), {2, 16});
  const auto caller = device.create_stream();
  DeviceBuffer in(device, 4 * 40), out(device, 4 * 40);
  device.fill(in.as(), 0, 4 * 40, caller);
  sender.add_send({1}, in.as<float>(), 40);
  receiver.add_recv(0, out.as<float>(), 40);
  sender.start(caller), receiver.start(caller);
  EXPECT_THROW(
      {
        for (bool done = false; !done;) {
          const bool sent = sender.progress(*t0);
          done = receiver.progress(*t1) && sent;
        }
      },
      compress::DecodeError);
}

}  // namespace
}  // namespace cmpi::comm::device
