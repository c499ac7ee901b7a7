// The data section's tokenizer against the model (data's own check, run by
// launch::check_domains after the config parses): data.tokenizer must load,
// and its ids must fit model.vocab_size.
#pragma once

#include "config/config.h"

namespace cmpi::data {

// Throws config::ConfigError at data.tokenizer (it does not load) or at
// model.vocab_size (its ids do not fit). No tokenizer named: nothing to check.
void check_tokenizer_fits(const config::Config& config);

}  // namespace cmpi::data
