#include "comm/test_faults.h"

#include <cstdlib>
#include <stdexcept>
#include <vector>

namespace cmpi::comm {
namespace {

std::vector<std::string> split_fields(const std::string& text) {
  std::vector<std::string> fields;
  size_t start = 0;
  for (size_t colon; (colon = text.find(':', start)) != std::string::npos; start = colon + 1)
    fields.push_back(text.substr(start, colon - start));
  fields.push_back(text.substr(start));
  return fields;
}

long long non_negative_number(const std::string& field, const std::string& text) {
  size_t used = 0;
  long long value = -1;
  try {
    value = std::stoll(field, &used);
  } catch (const std::exception&) {
  }
  if (field.empty() || used != field.size() || value < 0)
    throw std::invalid_argument(std::string(TestFaults::kVariable) + "=" + text + ": '" + field +
                                "' is not a non-negative number");
  return value;
}

}  // namespace

TestFaults TestFaults::parse(const std::string& text) {
  TestFaults faults;
  if (text.empty()) return faults;
  const auto fields = split_fields(text);
  if (fields[0] == "spin" && fields.size() == 3) {
    faults.spin_rank = int(non_negative_number(fields[1], text));
    faults.spin_at_call = uint64_t(non_negative_number(fields[2], text));
    if (faults.spin_at_call == 0)
      throw std::invalid_argument(std::string(kVariable) + "=" + text + ": calls count from 1");
  } else if (fields[0] == "stop" && fields.size() == 4 && !fields[2].empty()) {
    faults.stop_rank = int(non_negative_number(fields[1], text));
    faults.stop_group = fields[2];
    faults.stop_at_call = uint64_t(non_negative_number(fields[3], text));
    if (faults.stop_at_call == 0)
      throw std::invalid_argument(std::string(kVariable) + "=" + text + ": calls count from 1");
  } else if (fields[0] == "slowing" && fields.size() == 4) {
    faults.slowing_rank = int(non_negative_number(fields[1], text));
    faults.slowing_from_step = int64_t(non_negative_number(fields[2], text));
    faults.slowing_ms = uint64_t(non_negative_number(fields[3], text));
  } else if (fields[0] == "slow_save" && fields.size() == 3) {
    faults.slow_save_rank = int(non_negative_number(fields[1], text));
    faults.slow_save_ms = uint64_t(non_negative_number(fields[2], text));
  } else if (fields[0] == "lone_node" && fields.size() == 2) {
    faults.lone_node_rank = int(non_negative_number(fields[1], text));
  } else if (fields[0] == "block_sparse" && fields.size() == 2 &&
             (fields[1] == "sparse" || fields[1] == "dense")) {
    faults.block_sparse =
        fields[1] == "sparse" ? ForcedBlockSparse::kSparse : ForcedBlockSparse::kDense;
  } else if (fields[0] == "auto_timing" && fields.size() == 2) {
    faults.auto_timing_mbit = uint64_t(non_negative_number(fields[1], text));
    if (faults.auto_timing_mbit == 0)
      throw std::invalid_argument(std::string(kVariable) + "=" + text +
                                  ": the link needs a speed above 0 Mbit/s");
  } else {
    throw std::invalid_argument(
        std::string(kVariable) + "=" + text +
        ": expected spin:RANK:CALL, stop:RANK:GROUP:CALL, slowing:RANK:STEP:MS, "
        "slow_save:RANK:MS, lone_node:RANK, block_sparse:sparse|dense or auto_timing:MBIT");
  }
  return faults;
}

uint64_t TestFaults::step_delay_ms(int rank, int64_t step) const {
  if (rank != slowing_rank || step < slowing_from_step) return 0;
  return uint64_t(step - slowing_from_step + 1) * slowing_ms;
}

uint64_t TestFaults::save_delay_ms(int rank) const {
  return rank == slow_save_rank ? slow_save_ms : 0;
}

TestFaults TestFaults::from_environment() {
  const char* text = std::getenv(kVariable);
  return parse(text ? text : "");
}

}  // namespace cmpi::comm
