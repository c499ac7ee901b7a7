// parallel.dp_sync and parallel.diloco: read with their defaults, written
// back into the resolved config, and every setting DiLoCo cannot run refused
// with one error naming the key, file and line.
#include <string>

#include <gtest/gtest.h>

#include "config/config_loader.h"
#include "tests/config/config_test_support.h"

namespace cmpi::config {
namespace {

using namespace config_testing;

const std::string kDiloco = "model:\n  layers: 4\nparallel:\n  dp_sync: diloco\n";

TEST_F(ConfigTest, DilocoKeysAreReadWithTheirDefaults) {
  const Config plain = load_checked_config(write("model:\n  layers: 4\n"));
  EXPECT_EQ(plain.parallel.dp_sync, "every_step");
  const Config c = load_checked_config(write(kDiloco));
  EXPECT_EQ(c.parallel.dp_sync, "diloco");
  EXPECT_EQ(c.parallel.diloco.sync_every, 32);
  EXPECT_DOUBLE_EQ(c.parallel.diloco.outer_lr, 0.7);
  EXPECT_DOUBLE_EQ(c.parallel.diloco.outer_momentum, 0.9);
  EXPECT_EQ(c.parallel.diloco.fragments, 1);
  EXPECT_EQ(c.parallel.diloco.warmup_steps, 0);
  const Config set = load_checked_config(
      write(kDiloco + "  diloco:\n    sync_every: 8\n    outer_lr: 1\n    outer_momentum: 0\n"
                      "    fragments: 4\n    warmup_steps: 20\n"));
  EXPECT_EQ(set.parallel.diloco.sync_every, 8);
  EXPECT_DOUBLE_EQ(set.parallel.diloco.outer_lr, 1.0);
  EXPECT_DOUBLE_EQ(set.parallel.diloco.outer_momentum, 0.0);
  EXPECT_EQ(set.parallel.diloco.fragments, 4);
  EXPECT_EQ(set.parallel.diloco.warmup_steps, 20);
  // --set reaches the nested keys, and the resolved config reads back the same.
  const Config overridden = load_checked_config(write(kDiloco), {"parallel.diloco.sync_every=5"});
  EXPECT_EQ(overridden.parallel.diloco.sync_every, 5);
  const Config again = load_checked_config(write(to_yaml(set), "resolved.yaml"));
  EXPECT_EQ(again.parallel.dp_sync, "diloco");
  EXPECT_EQ(again.parallel.diloco.sync_every, 8);
  EXPECT_EQ(again.parallel.diloco.fragments, 4);
  EXPECT_EQ(again.parallel.diloco.warmup_steps, 20);
  EXPECT_DOUBLE_EQ(again.parallel.diloco.outer_lr, 1.0);
}

TEST_F(ConfigTest, BadDilocoSettingsNameTheKey) {
  expect_error_at(kDiloco + "  diloco:\n    sync_every: 0\n", "sync_every",
                  "parallel.diloco.sync_every", "0");
  expect_error_at(kDiloco + "  diloco:\n    outer_lr: 0\n", "outer_lr", "parallel.diloco.outer_lr",
                  "0");
  expect_error_at(kDiloco + "  diloco:\n    outer_momentum: 1\n", "outer_momentum",
                  "parallel.diloco.outer_momentum", "1");
  expect_error_at(kDiloco + "  diloco:\n    warmup_steps: -1\n", "warmup_steps",
                  "parallel.diloco.warmup_steps", "-1");
  expect_error_at(kDiloco + "  diloco:\n    sync_every: 64\n    fragments: 5\n", "fragments",
                  "parallel.diloco.fragments", "at most model.layers (4), got 5");
  expect_error_at(kDiloco + "  diloco:\n    sync_every: 2\n    fragments: 3\n", "fragments",
                  "parallel.diloco.fragments", "at most parallel.diloco.sync_every (2), got 3");
  expect_error_at(kDiloco + "  zero_stage: 1\n", "zero_stage", "parallel.zero_stage",
                  "needs zero_stage 0, got 1");
  expect_error_at(kDiloco + "  context: 2\n", "context", "parallel.context",
                  "does not run with context parallelism");
  expect_error_at(kDiloco + "  dp_sync_typo: 1\n", "dp_sync_typo", "parallel.dp_sync_typo", "");
  expect_error_at("model:\n  layers: 4\nparallel:\n  dp_sync: sometimes\n", "dp_sync",
                  "parallel.dp_sync", "every_step");
  expect_error_at(kDiloco +
                      "compression:\n  rules:\n"
                      "    - match: {group: dp, op: allreduce, role: gradient}\n"
                      "      codec: {name: powersgd}\n",
                  "dp_sync", "parallel.dp_sync", "uses powersgd");
}

TEST_F(ConfigTest, DilocoRefusesTheResnetAndOneReplica) {
  expect_error_at("model:\n  kind: resnet\n  depth: 11\nparallel:\n  dp_sync: diloco\n", "dp_sync",
                  "parallel.dp_sync", "built for the GPT");
  const std::string path = write(kDiloco);
  const Config c = load_checked_config(path);
  EXPECT_NO_THROW(validate_layout(c, 2));
  const std::string message = error_of([&] { validate_layout(c, 1); });
  EXPECT_EQ(
      message.rfind(
          path + ":" + std::to_string(line_of(kDiloco, "dp_sync")) + ": parallel.dp_sync: ", 0),
      0u)
      << message;
  EXPECT_CONTAINS(message, "one replica (dp = 1)");
}

}  // namespace
}  // namespace cmpi::config
