#include "bench/collective_bench_bounds.h"

#include <algorithm>

namespace cmpi::bench {

double wire_bound_seconds(comm::Op op, size_t bytes, int ranks, double ratio,
                          double link_bits_per_second) {
  if (ranks < 2 || link_bits_per_second <= 0 || ratio <= 0) return 0;
  const double n = ranks;
  double crossing = double(bytes);  // broadcast, p2p
  switch (op) {
    case comm::Op::kAllreduce:
      crossing = 2 * (n - 1) / n * double(bytes);
      break;
    case comm::Op::kAllgather:
    case comm::Op::kReduceScatter:
    case comm::Op::kAlltoall:
      crossing = (n - 1) / n * double(bytes);
      break;
    default:
      break;
  }
  return crossing * 8 / (ratio * link_bits_per_second);
}

double codec_bound_seconds(comm::Op op, int ranks, double encode_seconds, double decode_seconds) {
  if (ranks < 2) return 0;
  const double n = ranks;
  switch (op) {
    case comm::Op::kAllreduce:
      return encode_seconds + 2 * (n - 1) / n * decode_seconds;
    case comm::Op::kAllgather:
      return encode_seconds / n + (n - 1) / n * decode_seconds;
    case comm::Op::kReduceScatter:
    case comm::Op::kAlltoall:
      return (n - 1) / n * (encode_seconds + decode_seconds);
    default:
      return std::max(encode_seconds, decode_seconds);
  }
}

}  // namespace cmpi::bench
