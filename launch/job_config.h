// One config per job. Rank 0 alone reads the config files (so `--config
// /dev/stdin`, which only rank 0 can read under mpirun, works, and a file
// edited while the job starts cannot differ between ranks) and broadcasts
// their bytes; every rank merges them in order and checks the result
// (launch/checked_config.h) with its own
// `--set` overrides; then the
// ranks compare a digest of the resolved config, so ranks launched with
// different arguments (an MPMD launch, a wrapper script) stop with an error
// naming the first rank that differs instead of training different models.
//
// Collective over `world`. Errors come back as a ConfigError on every rank
// (the same message everywhere), never as a hang.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "config/config.h"

namespace cmpi::launch {

config::Config load_job_config(const std::vector<std::string>& paths,
                               const std::vector<std::string>& overrides, MPI_Comm world);

// FNV-1a 64 of `text`: the digest the ranks compare.
uint64_t config_digest(const std::string& text);

}  // namespace cmpi::launch
