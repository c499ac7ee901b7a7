// The `compression:` section of a run config <-> comm::PolicyConfig.
//
//   compression:
//     preset: zhybrid          # none | mzhybrid | zhybrid
//     min_bytes: 64KiB         # smaller messages stay raw
//     chunk_bytes: 1MiB        # pipelining granularity
//     error_sample_rate: 0.01  # fraction of lossy calls whose error is measured
//     sparse_embedding: auto   # auto | off: block-sparse allreduce of a sparse
//                              # embedding gradient when it pays (comm/policy.h)
//     rules:                   # tried in order, before the preset's rules
//       - match: {group: dp, op: allreduce, role: gradient, min_bytes: 1MiB}
//         codec: {name: zfp, mode: rate, rate: 10}   # or `none`, or `mpc`
//         error_feedback: true
//         chunk_bytes: 4MiB
//
// Every codec is built once through the registry while reading, so an unknown
// codec or a bad parameter is reported with the rule's file and line instead
// of surfacing later on some rank in the middle of training.
#pragma once

#include <yaml-cpp/yaml.h>

#include "comm/policy_config.h"
#include "compress/codec_registry.h"
#include "config/yaml_reader.h"

namespace cmpi::config {

// Reads the section (finishing it: unknown keys are errors). Throws ConfigError.
comm::PolicyConfig read_compression_config(MapReader section,
                                           const compress::CodecRegistry& codecs);

// Writes the section's keys (into an open mapping of `out`); reading them back
// gives an equal PolicyConfig, except for the rules' origin.
void write_compression_config(YAML::Emitter& out, const comm::PolicyConfig& config);

}  // namespace cmpi::config
