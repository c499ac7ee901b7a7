// What every fuzz target asserts about a refusal: the parser threw the
// exception type its header documents, and the message names the input it
// was given (the file label the target passed). Anything else -- another
// exception type escaping, an unlabelled message -- is a defect the fuzzer
// must report, so it aborts with the message (libFuzzer then saves the input).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace cmpi::fuzz {

// The label targets pass as a file path; every message must contain it.
constexpr const char* kLabel = "fuzz-input";

[[noreturn]] inline void defect(const std::string& what) {
  std::fprintf(stderr, "fuzz defect: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// A refusal whose message does not name the input is a defect.
inline void require_labelled(const std::string& message, std::string_view label = kLabel) {
  if (message.find(label) == std::string::npos)
    defect("error does not name the input '" + std::string(label) + "': " + message);
}

}  // namespace cmpi::fuzz
