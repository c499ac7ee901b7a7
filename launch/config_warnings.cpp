#include "launch/config_warnings.h"

#include <cstdio>

#include "comm/powersgd_settings.h"
#include "config/config_loader.h"
#include "config/yaml_reader.h"
#include "models/family/gpt_family.h"

namespace cmpi::launch {

using namespace config;
namespace {

// Below these a message's fixed costs (MPI's per-message latency, a payload
// header, a codec call) outweigh its bytes many times over.
constexpr int64_t kSmallChunkBytes = 4 << 10;
constexpr int64_t kSmallBucketBytes = 64 << 10;

double gradient_bytes(const ModelConfig& m) {
  return double(models::gpt_options(m).parameter_count()) * sizeof(float);
}

std::string count_text(double n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, n < 1e6 ? "%.0f" : "%.3g", n);
  return buf;
}

void warn_small_chunk(const Config& c, const std::string& key, int64_t chunk,
                      std::vector<std::string>& out) {
  if (chunk <= 0 || chunk >= kSmallChunkBytes) return;
  const double messages = gradient_bytes(c.model) / double(chunk);
  out.push_back(origin_of(c, key) + ": " + key + ": " + format_size(chunk) +
                (chunk < 1024 ? " bytes" : "") +
                " cuts every compressed transfer into pieces of that size: this model's " +
                format_size(int64_t(gradient_bytes(c.model))) + " of gradients alone become ~" +
                count_text(messages) +
                " messages per step, each paying MPI's per-message latency and a codec header; "
                "that can make a step thousands of times slower than the default 1MiB");
}

// A powersgd rule set up the way that was measured not to reach the
// uncompressed run's loss (docs/policy.md, "Low rank: PowerSGD"): the token
// embedding approximated at low rank (raw_embeddings: false), or a rank
// below 4. The run goes on: another model may tolerate it.
void warn_powersgd(const Config& c, size_t i, std::vector<std::string>& out) {
  const auto& codec = c.compression.rules[i].codec;
  if (!codec || !comm::is_powersgd(*codec)) return;
  const comm::PowerSgdSettings s = comm::parse_powersgd_settings(*codec);
  const std::string key = "compression.rules[" + std::to_string(i) + "].codec";
  if (!s.raw_embeddings)
    out.push_back(origin_of(c, key) + ": " + key +
                  ": powersgd with raw_embeddings: false approximates the token embedding's "
                  "gradient (tied to the output head, far from low rank) at rank " +
                  std::to_string(s.rank) +
                  "; on the benchmark GPT with AdamW that never reached the uncompressed "
                  "run's loss (docs/policy.md); the default raw_embeddings: true did");
  if (s.rank < 4)
    out.push_back(origin_of(c, key) + ": " + key + ": powersgd rank " + std::to_string(s.rank) +
                  " is below 4: on the benchmark GPT with AdamW rank 2 never reached the "
                  "uncompressed run's loss in 150 steps (docs/policy.md)");
}

}  // namespace

std::vector<std::string> config_warnings(const Config& c) {
  // What loading noticed first (GPT-NeoX keys with no meaning here).
  std::vector<std::string> out = c.load_warnings;
  warn_small_chunk(c, "compression.chunk_bytes", c.compression.chunk_bytes, out);
  for (size_t i = 0; i < c.compression.rules.size(); ++i) {
    warn_small_chunk(c, "compression.rules[" + std::to_string(i) + "].chunk_bytes",
                     c.compression.rules[i].chunk_bytes, out);
    warn_powersgd(c, i, out);
  }
  const int64_t bucket = c.parallel.dp_bucket_bytes;
  if (bucket < kSmallBucketBytes) {
    const double collectives = gradient_bytes(c.model) / double(bucket);
    if (collectives > 64)
      out.push_back(origin_of(c, "parallel.dp_bucket_bytes") +
                    ": parallel.dp_bucket_bytes: " + format_size(bucket) +
                    " turns this model's gradients into ~" + count_text(collectives) +
                    " collectives per step, each paying the network's latency; the default is "
                    "25MiB");
  }
  return out;
}

}  // namespace cmpi::launch
