// Which settings the codec benchmark runs for each registered codec name.
//
// The benchmark asks the registry for its codec names at run time and looks
// each up here; a name without an entry runs with its default spec, so a new
// codec is benchmarked the day it registers. Settings whose magnitude only
// means something relative to the data (zfp's absolute tolerance, the
// threshold sparsifier's cut-off) are given as a factor of the dataset's RMS
// and resolved per dataset.
#pragma once

#include <string>
#include <vector>

#include "compress/codec_spec.h"

namespace cmpi::bench {

struct CodecSetting {
  std::string spec;       // CodecSpec::parse form: "zfp:mode=rate,rate=8"
  std::string rms_param;  // if set: this parameter becomes rms_factor * RMS(data)
  double rms_factor = 0;
  bool quick = false;  // part of the --quick subset
};

// The settings for a codec name (full table, or the --quick subset); an
// unknown name gets one setting: the bare name.
std::vector<CodecSetting> settings_for(const std::string& codec_name, bool quick);

// The spec to build for a dataset whose RMS is data_rms.
compress::CodecSpec resolve(const CodecSetting& setting, double data_rms);

}  // namespace cmpi::bench
