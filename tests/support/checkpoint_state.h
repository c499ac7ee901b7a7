// Two checkpoints hold the same state: the same parameter names, optimizer
// step count, and every tensor's weights and both AdamW moments bit for bit,
// whatever layouts wrote them (each tensor is reassembled whole). For the
// resharding tests: a load re-cuts the tensors for the new layout, and an
// immediate save must cut them back to exactly what was loaded. A vocabulary
// table padded differently by the two layouts (model.vocab_multiple) is
// compared on the rows both hold: the vocabulary and the padding they share.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "checkpoint/loaded_checkpoint.h"

namespace cmpi::testing {

inline void expect_same_checkpoint_state(const std::string& saved, const std::string& reloaded,
                                         const std::string& what) {
  const auto a = checkpoint::LoadedCheckpoint::read(saved, nullptr);
  const auto b = checkpoint::LoadedCheckpoint::read(reloaded, nullptr);
  ASSERT_EQ(a.names(), b.names()) << what;
  EXPECT_EQ(a.metadata().optimizer_steps, b.metadata().optimizer_steps) << what;
  for (const auto& name : a.names()) {
    const auto x = a.assemble(name), y = b.assemble(name);
    const bool table = name == "token_embedding.weight" || name == "output_head.weight";
    if (!table || x.shape.size() != 2 || y.shape.size() != 2 || x.shape[1] != y.shape[1])
      ASSERT_EQ(x.shape, y.shape) << what << " " << name;
    const size_t bytes = std::min(x.values.size(), y.values.size()) * sizeof(float);
    EXPECT_EQ(std::memcmp(x.values.data(), y.values.data(), bytes), 0) << what << " " << name;
    EXPECT_EQ(std::memcmp(x.exp_avg.data(), y.exp_avg.data(), bytes), 0) << what << " " << name;
    EXPECT_EQ(std::memcmp(x.exp_avg_sq.data(), y.exp_avg_sq.data(), bytes), 0)
        << what << " " << name;
  }
}

}  // namespace cmpi::testing
