// Numbers for people: "1.65 TB", "24.23 GB", "456 B" (decimal units, two
// decimals) and "12.3 ms", "850 us", "2.41 s". One place, so that
// the progress line, the summary, the planner and error messages agree.
#pragma once

#include <string>

namespace cmpi::trainer {

std::string human_bytes(double bytes);
std::string human_seconds(double seconds);

}  // namespace cmpi::trainer
