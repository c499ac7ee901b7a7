// Warnings for settings that are legal but cost far more than they can be
// worth (a chunk of a few bytes turns one gradient bucket into millions of
// messages). Each names the key, where it was written, and the cost in
// messages per step, so the user can tell a deliberate experiment from a
// typo. The run goes on; rank 0 prints them before training.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace cmpi::launch {

std::vector<std::string> config_warnings(const config::Config& config);

}  // namespace cmpi::launch
