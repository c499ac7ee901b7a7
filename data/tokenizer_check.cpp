#include "data/tokenizer_check.h"

#include <cstdint>
#include <string>

#include "config/config_loader.h"
#include "data/tokenizer.h"

namespace cmpi::data {

void check_tokenizer_fits(const config::Config& c) {
  if (c.data.tokenizer.empty()) return;
  uint64_t ids = 0;
  try {
    ids = make_tokenizer(c.data.tokenizer, "", "")->vocab_size();
  } catch (const std::exception& e) {
    config::fail_at(c, "data.tokenizer", e.what());
  }
  if (ids > uint64_t(c.model.vocab_size))
    config::fail_at(c, "model.vocab_size",
                    "is " + std::to_string(c.model.vocab_size) + " but data.tokenizer " +
                        c.data.tokenizer + " has " + std::to_string(ids) + " ids");
}

}  // namespace cmpi::data
