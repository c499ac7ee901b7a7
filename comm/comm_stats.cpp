#include "comm/comm_stats.h"

#include <cstdio>

namespace cmpi::comm {

OpCounters& OpCounters::operator+=(const OpCounters& o) {
  calls += o.calls;
  raw_bytes += o.raw_bytes;
  wire_bytes += o.wire_bytes;
  intra_wire_bytes += o.intra_wire_bytes;
  inter_wire_bytes += o.inter_wire_bytes;
  compressed_calls += o.compressed_calls;
  seconds += o.seconds;
  encode_seconds += o.encode_seconds;
  decode_seconds += o.decode_seconds;
  wire_seconds += o.wire_seconds;
  error_sum += o.error_sum;
  error_samples += o.error_samples;
  nonfinite_raw_chunks += o.nonfinite_raw_chunks;
  block_decisions += o.block_decisions;
  block_density_sum += o.block_density_sum;
  block_fallbacks += o.block_fallbacks;
  return *this;
}

OpCounters CommStats::total() const {
  OpCounters sum;
  for (const auto& c : per_op_) sum += c;
  return sum;
}

std::string counters_json(const OpCounters& c) {
  char buf[832];
  std::snprintf(buf, sizeof buf,
                "{\"calls\":%llu,\"compressed_calls\":%llu,\"raw_bytes\":%llu,"
                "\"wire_bytes\":%llu,\"intra_wire_bytes\":%llu,\"inter_wire_bytes\":%llu,"
                "\"ratio\":%.4f,\"seconds\":%.6f,\"encode_s\":%.6f,"
                "\"decode_s\":%.6f,\"wire_s\":%.6f,\"rel_error\":%.3e,\"error_samples\":%llu,"
                "\"nonfinite_raw_chunks\":%llu,\"block_decisions\":%llu,\"block_density\":%.4f,"
                "\"block_fallbacks\":%llu}",
                (unsigned long long)c.calls, (unsigned long long)c.compressed_calls,
                (unsigned long long)c.raw_bytes, (unsigned long long)c.wire_bytes,
                (unsigned long long)c.intra_wire_bytes, (unsigned long long)c.inter_wire_bytes,
                c.ratio(), c.seconds, c.encode_seconds, c.decode_seconds, c.wire_seconds,
                c.mean_error(), (unsigned long long)c.error_samples,
                (unsigned long long)c.nonfinite_raw_chunks, (unsigned long long)c.block_decisions,
                c.mean_block_density(), (unsigned long long)c.block_fallbacks);
  return buf;
}

std::string CommStats::to_json() const {
  std::string out = counters_json(total());
  out.pop_back();  // reopen the object to append per-op entries
  out += ",\"ops\":{";
  bool first = true;
  for (int i = 0; i < kOpCount; ++i) {
    if (per_op_[i].calls == 0) continue;
    out +=
        (first ? "\"" : ",\"") + std::string(to_string(Op(i))) + "\":" + counters_json(per_op_[i]);
    first = false;
  }
  return out + "}}";
}

}  // namespace cmpi::comm
