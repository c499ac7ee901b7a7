// The rows of `cmpi-bench collective`: one per (op, size, variant), printed
// as an aligned table on rank 0 while the run goes and appended to the CSV
// (flushed per row, so an interrupted run keeps what it measured). The CSV
// columns are described in docs/emulated_cluster.md.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

namespace cmpi::bench {

struct CollectiveRow {
  std::string op;    // "allreduce", "p2p", ...
  size_t bytes = 0;  // message size (see collective_bench_ops.h)
  int ranks = 0;
  std::string variant;    // "mpi" (plain MPI call), "none" (Communicator, raw policy), codec spec
  double compressed = 0;  // fraction of the variant's calls that went compressed
  int iterations = 0;
  double median_seconds = 0;  // median over rounds of the slowest rank's time
  double min_seconds = 0;
  double wire_bytes_per_rank = 0;  // CommStats wire bytes per call, mean over ranks
  double ratio = 1;                // codec ratio on this data (raw / encoded), 1 for raw
  double speedup = 0;              // mpi median / this median
  double rel_error = 0;            // ||result - mpi result|| / ||mpi result|| over all ranks
  double encode_seconds = 0;       // codec alone on S bytes, slowest rank, median
  double decode_seconds = 0;
  double codec_seconds = 0;  // codec work of the algorithm (collective_bench_bounds.h)
  double link_bits_per_second = 0;
  double wire_bound_seconds = 0;  // 0 without --link-rate
  double bound_ratio = 0;         // median / max(wire bound, codec), 0 if both are 0
  std::string data;
};

std::string collective_csv_header();
std::string collective_csv_line(const CollectiveRow& row);

class CollectiveTable {
 public:
  // csv_path empty: console only. Throws std::runtime_error naming the path
  // if it cannot be opened.
  CollectiveTable(const std::string& csv_path, std::FILE* console);
  ~CollectiveTable();
  CollectiveTable(const CollectiveTable&) = delete;
  CollectiveTable& operator=(const CollectiveTable&) = delete;

  // "# allreduce 16MiB, 4 ranks" and the column names.
  void begin_point(const std::string& op, size_t bytes, int ranks);
  void add(const CollectiveRow& row);

 private:
  std::FILE* csv_ = nullptr;
  std::FILE* console_;
  std::string path_;
};

}  // namespace cmpi::bench
