#include "config/config_limits.h"

#include <cmath>
#include <string>
#include <vector>

#include "config/config_loader.h"
#include "config/yaml_reader.h"

namespace cmpi::config {
namespace {

// Elements in one tensor (or one micro-batch's activation of one kind):
// 2^46 float32 are 256 TiB, beyond any single machine's memory.
constexpr long double kMaxElements = 70368744177664.0L;  // 2^46

struct KeyBound {
  const char* key;
  int64_t value;
  int64_t max;
  const char* why;
};

std::string sci(long double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3Lg", x);
  return buf;
}

struct Factor {
  const char* key;
  int64_t value;
};

// Refuses a product of keys larger than kMaxElements. It is reported at the
// largest factor the user wrote (that is the one they most likely mistyped).
void check_product(const Config& config, const std::vector<Factor>& factors, long double scale,
                   const std::string& what) {
  long double product = scale;
  for (const Factor& f : factors) product *= (long double)f.value;
  if (product <= kMaxElements) return;
  const Factor* culprit = &factors[0];
  for (const Factor& f : factors)
    if ((config.origins.count(f.key) && !config.origins.count(culprit->key)) ||
        (config.origins.count(f.key) == config.origins.count(culprit->key) &&
         f.value > culprit->value))
      culprit = &f;
  std::string terms;
  for (const Factor& f : factors)
    terms +=
        (terms.empty() ? "" : " x ") + std::string(f.key) + " (" + std::to_string(f.value) + ")";
  if (scale != 1) terms += " x " + sci(scale);
  fail_at(config, culprit->key,
          what + " would hold " + terms + " = " + sci(product) + " elements, more than " +
              sci(kMaxElements) + " (256 TiB of float32) that any machine holds");
}

}  // namespace

void check_size_limits(const Config& c) {
  const ModelConfig& m = c.model;
  const TrainingConfig& t = c.training;
  const KeyBound bounds[] = {
      {"model.hidden", m.hidden, int64_t(1) << 20, "the widest published models use ~2^14"},
      {"model.mlp_ratio", m.mlp_ratio, 256, "published models use 4 (or ~2.7 with gated MLPs)"},
      {"model.layers", m.layers, int64_t(1) << 16, ""},
      {"model.seq_len", m.seq_len, int64_t(1) << 24, ""},
      {"model.vocab_size", m.vocab_size, int64_t(1) << 31, "token ids are stored as int32 on disk"},
      {"training.micro_batch", t.micro_batch, int64_t(1) << 24, ""},
      {"training.global_batch", t.global_batch, int64_t(1) << 40, ""},
      {"training.steps", t.steps, int64_t(1) << 40, ""},
      {"parallel.dp_bucket_bytes", c.parallel.dp_bucket_bytes, int64_t(1) << 30,
       "a bucket is one collective; MPI counts are 32-bit and larger buckets overlap nothing more"},
      {"compression.chunk_bytes", c.compression.chunk_bytes, int64_t(1) << 30,
       "a chunk is one message; MPI counts are 32-bit"},
  };
  for (const KeyBound& b : bounds) {
    if (b.value <= b.max) continue;
    std::string why = "must be <= " + std::to_string(b.max) + ", got " + std::to_string(b.value);
    if (*b.why) why += " (" + std::string(b.why) + ")";
    fail_at(c, b.key, why);
  }
  for (size_t i = 0; i < c.compression.rules.size(); ++i) {
    const int64_t chunk = c.compression.rules[i].chunk_bytes;
    if (chunk > (int64_t(1) << 30))
      fail_at(c, "compression.rules[" + std::to_string(i) + "].chunk_bytes",
              "must be <= " + std::to_string(int64_t(1) << 30) +
                  " (a chunk is one message; MPI "
                  "counts are 32-bit), got " +
                  std::to_string(chunk));
  }

  if (m.kind == ModelFamily::kResnet) {
    const KeyBound resnet_bounds[] = {
        {"model.depth", m.depth, int64_t(1) << 16, "ResNet-1001 is the deepest published"},
        {"model.width", m.width, int64_t(1) << 16, ""},
        {"model.image_size", m.image_size, int64_t(1) << 20, ""},
        {"model.channels", m.channels, int64_t(1) << 16, ""},
        {"model.classes", m.classes, int64_t(1) << 24, ""},
    };
    for (const KeyBound& b : resnet_bounds) {
      if (b.value <= b.max) continue;
      std::string why = "must be <= " + std::to_string(b.max) + ", got " + std::to_string(b.value);
      if (*b.why) why += " (" + std::string(b.why) + ")";
      fail_at(c, b.key, why);
    }
    // The widest activation at full resolution: the first group's block
    // output, 4 x width channels.
    check_product(c,
                  {{"training.micro_batch", t.micro_batch},
                   {"model.width", m.width},
                   {"model.image_size", m.image_size},
                   {"model.image_size", m.image_size}},
                  4, "one micro-batch's first-group activation");
    return;  // the GPT keys below size nothing
  }
  check_product(c, {{"model.vocab_size", m.vocab_size}, {"model.hidden", m.hidden}}, 1,
                "the token embedding");
  check_product(
      c, {{"model.mlp_ratio", m.mlp_ratio}, {"model.hidden", m.hidden}, {"model.hidden", m.hidden}},
      1, "one MLP weight");
  check_product(c,
                {{"model.layers", m.layers},
                 {"model.mlp_ratio", m.mlp_ratio},
                 {"model.hidden", m.hidden},
                 {"model.hidden", m.hidden}},
                2, "the blocks' MLP weights");
  check_product(c,
                {{"training.micro_batch", t.micro_batch},
                 {"model.seq_len", m.seq_len},
                 {"model.vocab_size", m.vocab_size}},
                1, "one micro-batch's logits");
  check_product(c,
                {{"training.micro_batch", t.micro_batch},
                 {"model.heads", m.heads},
                 {"model.seq_len", m.seq_len},
                 {"model.seq_len", m.seq_len}},
                1, "one micro-batch's attention scores");
  check_product(c, {{"training.global_batch", t.global_batch}, {"model.seq_len", m.seq_len}}, 1,
                "one step's tokens");
}

}  // namespace cmpi::config
