// Unit tests of the codec benchmark's building blocks: the figures it prints
// are only as good as its error metrics, medians, reference round trips,
// data loading and settings table.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>

#include "bench/bench_dataset.h"
#include "bench/codec_bench.h"
#include "bench/codec_settings.h"
#include "bench/codec_subject.h"
#include "bench/lossless_references.h"
#include "bench/measurement.h"
#include "bench/result_table.h"
#include "compress/codec_registry.h"
#include "tests/support/test_seed.h"

namespace cmpi::bench {
namespace {

std::vector<float> random_floats(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1e-3f);
  std::vector<float> values(n);
  for (auto& v : values) v = normal(rng);
  return values;
}

float float_from_bits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

TEST(BenchCompare, RelativeRmseAndMaxErrorOfKnownVectors) {
  const std::vector<float> x{1, 2, 3, 4};
  const std::vector<float> y{1, 2, 3, 5};
  ErrorStats stats = compare(x.data(), y.data(), x.size());
  EXPECT_NEAR(stats.rel_rmse, 1.0 / std::sqrt(30.0), 1e-12);
  EXPECT_DOUBLE_EQ(stats.max_abs_error, 1.0);
  EXPECT_FALSE(stats.bit_exact);
  EXPECT_EQ(stats.first_mismatch, 3u);
}

TEST(BenchCompare, IdenticalInputIsExactWithZeroError) {
  const std::vector<float> x{-0.0f, 1e-40f, std::numeric_limits<float>::infinity(),
                             float_from_bits(0x7fc00123u)};
  ErrorStats stats = compare(x.data(), x.data(), x.size());
  EXPECT_TRUE(stats.bit_exact);
  EXPECT_EQ(stats.rel_rmse, 0.0);
  EXPECT_EQ(stats.max_abs_error, 0.0);
}

TEST(BenchCompare, SignOfZeroAndNanPayloadAreNotBitExactButNoError) {
  const std::vector<float> x{-0.0f, float_from_bits(0x7fc00001u)};
  const std::vector<float> y{0.0f, float_from_bits(0x7fc00002u)};
  ErrorStats stats = compare(x.data(), y.data(), x.size());
  EXPECT_FALSE(stats.bit_exact);
  EXPECT_EQ(stats.max_abs_error, 0.0);
}

TEST(BenchCompare, FiniteValueTurnedNanIsAnUnboundedError) {
  const std::vector<float> x{1, 2};
  const std::vector<float> y{1, std::numeric_limits<float>::quiet_NaN()};
  ErrorStats stats = compare(x.data(), y.data(), x.size());
  EXPECT_TRUE(std::isinf(stats.max_abs_error));
  EXPECT_TRUE(std::isinf(stats.rel_rmse));
}

TEST(BenchMedian, OddEvenAndEmpty) {
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median({7}), 7);
  EXPECT_EQ(median({}), 0);
}

TEST(BenchParseCount, SuffixesAndErrors) {
  EXPECT_EQ(parse_count("--size", "4096"), 4096u);
  EXPECT_EQ(parse_count("--size", "64Ki"), 65536u);
  EXPECT_EQ(parse_count("--size", "16Mi"), size_t(16) << 20);
  EXPECT_EQ(parse_count("--size", "1M"), 1000000u);
  EXPECT_EQ(parse_count("--size", "2G"), 2000000000u);
  for (const char* bad : {"0", "", "x", "1.5M", "-1", "12Q", "Mi", "99999999999Gi"}) {
    try {
      parse_count("--size", bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("--size"), std::string::npos) << e.what();
    }
  }
}

TEST(BenchArgs, QuickDefaultsAndUnknownOption) {
  std::vector<std::string> words{"codec", "--quick", "--threads", "3", "--codec", "zfp,mpc"};
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  CodecBenchOptions options = parse_codec_bench_args(int(argv.size()), argv.data());
  EXPECT_TRUE(options.quick);
  EXPECT_EQ(options.size, size_t(256) << 10);
  EXPECT_EQ(options.repeats, 1);
  EXPECT_EQ(options.threads, 3);
  EXPECT_EQ(options.codecs, (std::vector<std::string>{"zfp", "mpc"}));

  std::vector<std::string> spec_words{"codec", "--codec", "zfp:mode=rate,rate=8"};
  std::vector<char*> spec_argv;
  for (auto& w : spec_words) spec_argv.push_back(w.data());
  options = parse_codec_bench_args(int(spec_argv.size()), spec_argv.data());
  EXPECT_EQ(options.codecs, (std::vector<std::string>{"zfp:mode=rate,rate=8"}));

  std::vector<std::string> clock_words{"codec", "--clock", "cpu"};
  std::vector<char*> clock_argv;
  for (auto& w : clock_words) clock_argv.push_back(w.data());
  EXPECT_TRUE(parse_codec_bench_args(int(clock_argv.size()), clock_argv.data()).cpu_clock);
  clock_words[2] = "gpu";
  clock_argv.assign({clock_words[0].data(), clock_words[1].data(), clock_words[2].data()});
  EXPECT_THROW(parse_codec_bench_args(int(clock_argv.size()), clock_argv.data()),
               std::invalid_argument);

  std::vector<std::string> bad_words{"codec", "--frobnicate"};
  std::vector<char*> bad_argv;
  for (auto& w : bad_words) bad_argv.push_back(w.data());
  EXPECT_THROW(parse_codec_bench_args(int(bad_argv.size()), bad_argv.data()),
               std::invalid_argument);
}

TEST(BenchCsv, FieldsWithCommasOrQuotesAreQuoted) {
  EXPECT_EQ(csv_field("mpc:dim=1"), "mpc:dim=1");
  EXPECT_EQ(csv_field("zfp:mode=rate,rate=8"), "\"zfp:mode=rate,rate=8\"");
  EXPECT_EQ(csv_field("a\"b"), "\"a\"\"b\"");
}

TEST(BenchCsv, LineHasOneFieldPerHeaderColumn) {
  ResultRow row;
  row.dataset = "gaussian";
  row.family = "zfp";
  row.spec = "zfp:mode=rate,rate=8";
  row.measurement.elements = 1000;
  row.measurement.encoded_bytes = 1000;
  row.measurement.encode_seconds_1t = row.measurement.decode_seconds_1t = 1e-6;
  const std::string line = csv_line(row);
  // Commas outside quotes separate fields.
  size_t fields = 1;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    if (c == ',' && !quoted) ++fields;
  }
  size_t columns = 1;
  for (char c : csv_header()) columns += c == ',';
  EXPECT_EQ(fields, columns) << line;
  EXPECT_NE(line.find(",4,8,4,4,"), std::string::npos) << "ratio 4, 8 bits, 4 GB/s: " << line;
}

class LosslessReferenceRoundTrip : public ::testing::TestWithParam<size_t> {};

TEST_P(LosslessReferenceRoundTrip, EveryReferenceGivesBackEveryBit) {
  const size_t n = GetParam();
  std::vector<float> input = random_floats(n, cmpi::testing::test_seed() + n);
  // Bit patterns a float compressor must not normalise.
  const uint32_t specials[] = {0x80000000u, 0x00000001u, 0x7f800000u,
                               0xff800000u, 0x7fc12345u, 0xffbfffffu};
  for (size_t i = 0; i < std::size(specials) && i < n; ++i)
    input[(i * 7919) % n] = float_from_bits(specials[i]);
  for (auto& reference : make_lossless_references({}, 2)) {
    for (int threads : {1, 2}) {
      std::vector<float> output(n, 123.0f);
      const size_t bytes = reference->encode(input.data(), n, threads);
      EXPECT_GT(bytes, 0u) << reference->label();
      reference->decode(output.data(), n, threads);
      EXPECT_EQ(std::memcmp(input.data(), output.data(), n * 4), 0)
          << reference->label() << " with " << threads << " threads, n = " << n;
    }
  }
}

// 1 and 1000 floats fit one chunk; 300000 crosses the 1 MiB chunk boundary.
INSTANTIATE_TEST_SUITE_P(Sizes, LosslessReferenceRoundTrip, ::testing::Values(1, 1000, 300000));

TEST(LosslessReferences, UnknownFamilyIsNamed) {
  try {
    make_lossless_references({"zstd", "brotli"}, 1);
    FAIL() << "accepted brotli";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("brotli"), std::string::npos);
  }
}

TEST(LosslessReferences, CompressibleDataCompresses) {
  std::vector<float> zeros_and_ones(1 << 18);
  for (size_t i = 0; i < zeros_and_ones.size(); ++i) zeros_and_ones[i] = float(i % 2);
  for (auto& reference : make_lossless_references({"zstd", "lz4", "blosc"}, 1))
    EXPECT_LT(reference->encode(zeros_and_ones.data(), zeros_and_ones.size(), 1),
              zeros_and_ones.size() * 4 / 10)
        << reference->label();
}

// A subject that decodes into all but the last element: measure() must not
// report it as accurate.
class SkippingSubject final : public BenchSubject {
 public:
  explicit SkippingSubject(bool claims_lossless) : lossless_(claims_lossless) {}
  std::string label() const override { return "skipping"; }
  std::string family() const override { return "skipping"; }
  bool lossless() const override { return lossless_; }
  std::string parallelism() const override { return "omp"; }
  size_t encode(const float* in, size_t n, int) override {
    kept_.assign(in, in + n);
    return n * 4;
  }
  void decode(float* out, size_t n, int) override {
    std::copy(kept_.begin(), kept_.begin() + long(n) - 1, out);
  }

 private:
  bool lossless_;
  std::vector<float> kept_;
};

TEST(BenchMeasure, SkippedOutputElementShowsAsError) {
  std::vector<float> input = random_floats(100, cmpi::testing::test_seed());
  std::vector<float> scratch;
  SkippingSubject lossy(false);
  Measurement m = measure(lossy, input, {1, 2}, scratch);
  EXPECT_TRUE(std::isinf(m.error.max_abs_error));
  SkippingSubject fake_lossless(true);
  EXPECT_THROW(measure(fake_lossless, input, {1, 1}, scratch), std::runtime_error);
}

TEST(BenchMeasure, IdentityCodecIsExactWithRatioBelowOne) {
  compress::CodecRegistry registry = compress::CodecRegistry::with_builtin_codecs();
  CodecSubject identity(registry, compress::CodecSpec("identity"), 2);
  std::vector<float> input = random_floats(5000, cmpi::testing::test_seed());
  std::vector<float> scratch;
  Measurement m = measure(identity, input, {2, 2}, scratch);
  EXPECT_TRUE(m.error.bit_exact);
  Measurement by_cpu_time = measure(identity, input, {2, 1, true}, scratch);
  EXPECT_GT(by_cpu_time.encode_seconds_1t, 0);
  EXPECT_GT(by_cpu_time.decode_seconds_1t, 0);
  EXPECT_EQ(m.encoded_bytes, 5000u * 4 + compress::kPayloadHeaderBytes);
  EXPECT_GT(m.encode_seconds_1t, 0);
  EXPECT_GT(m.decode_seconds_mt, 0);
}

TEST(BenchSettings, EveryRegisteredCodecBuildsAtEverySetting) {
  compress::CodecRegistry registry = compress::CodecRegistry::with_builtin_codecs();
  for (const auto& name : registry.names()) {
    for (bool quick : {false, true}) {
      const auto settings = settings_for(name, quick);
      EXPECT_FALSE(settings.empty()) << name;
      for (const auto& setting : settings) {
        const compress::CodecSpec spec = resolve(setting, 0.5);
        EXPECT_EQ(spec.name(), name);
        EXPECT_NO_THROW(CodecSubject(registry, spec, 2)) << compact_spec(spec);
      }
    }
  }
}

TEST(BenchSettings, RmsRelativeParameterScalesWithTheData) {
  bool found = false;
  for (const auto& setting : settings_for("zfp", false)) {
    if (setting.rms_param != "tolerance") continue;
    found = true;
    const compress::CodecSpec spec = resolve(setting, 2e-3);
    EXPECT_NEAR(spec.get_double("tolerance", 0), setting.rms_factor * 2e-3,
                1e-3 * setting.rms_factor * 2e-3);
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(settings_for("no_table_codec", false).size(), 1u);
  EXPECT_EQ(settings_for("no_table_codec", false)[0].spec, "no_table_codec");
}

TEST(BenchDataset, GaussianIsSeededAndStandardNormal) {
  const uint64_t seed = cmpi::testing::test_seed();
  Dataset a = make_gaussian_dataset(200001, seed);
  Dataset b = make_gaussian_dataset(200001, seed);
  EXPECT_EQ(a.values, b.values);
  EXPECT_NE(a.values, make_gaussian_dataset(200001, seed + 1).values);
  double sum = 0;
  for (float v : a.values) sum += v;
  const double mean = sum / double(a.values.size());
  DatasetStats stats = compute_stats(a.values);
  // Standard error of the mean is 1/sqrt(n) ~ 0.0022; of the RMS ~ 0.0016.
  EXPECT_NEAR(mean, 0.0, 0.015);
  EXPECT_NEAR(stats.rms, 1.0, 0.01);
  EXPECT_EQ(stats.nonfinite, 0u);
}

TEST(BenchDataset, F32FileIsReadLittleEndianAndCapped) {
  const std::string path = ::testing::TempDir() + "bench_dataset_test.f32";
  const std::vector<float> values = random_floats(1000, cmpi::testing::test_seed());
  {
    std::ofstream out(path, std::ios::binary);
    for (float v : values) {
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      const unsigned char bytes[4] = {uint8_t(bits), uint8_t(bits >> 8), uint8_t(bits >> 16),
                                      uint8_t(bits >> 24)};
      out.write(reinterpret_cast<const char*>(bytes), 4);
    }
  }
  EXPECT_EQ(f32_file_elements(path), 1000u);
  EXPECT_EQ(load_f32_dataset("x", path, 0).values, values);
  Dataset capped = load_f32_dataset("x", path, 10);
  EXPECT_EQ(capped.values, std::vector<float>(values.begin(), values.begin() + 10));
  EXPECT_EQ(dataset_name_from_path("/a/b/gradients.f32"), "gradients");
  std::remove(path.c_str());
}

TEST(BenchDataset, BadFilesAreRefusedByName) {
  const std::string odd = ::testing::TempDir() + "bench_odd.f32";
  std::ofstream(odd, std::ios::binary) << "abcde";
  const std::string empty = ::testing::TempDir() + "bench_empty.f32";
  std::ofstream(empty, std::ios::binary).flush();
  for (const std::string& path : {odd, empty, ::testing::TempDir() + "bench_missing.f32"}) {
    try {
      f32_file_elements(path);
      ADD_FAILURE() << "accepted " << path;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  std::remove(odd.c_str());
  std::remove(empty.c_str());
}

}  // namespace
}  // namespace cmpi::bench
