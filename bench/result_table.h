// The codec benchmark's rows: printed as an aligned table while the run goes
// and appended to a CSV file (flushed per row, so an interrupted run keeps
// what it measured). The CSV columns are a contract: docs/benchmarks.md
// describes them and the smoke test checks them.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "bench/measurement.h"

namespace cmpi::bench {

struct ResultRow {
  std::string dataset;
  std::string family;  // codec or library name: "zfp", "blosc"
  std::string spec;    // the setting: "zfp:mode=rate,rate=8"
  bool lossless = false;
  bool reference = false;   // a lossless reference point, not a project codec
  std::string parallelism;  // BenchSubject::parallelism()
  int threads = 1;
  std::string clock_1t = "wall";  // what timed the _1t columns: "wall" or "cpu"
  Measurement measurement;
};

// "dataset,codec,spec,kind,lossless,elements,..." (no newline).
std::string csv_header();
std::string csv_line(const ResultRow& row);
// Quotes a field that holds a comma, quote or newline (RFC 4180).
std::string csv_field(const std::string& text);

class ResultTable {
 public:
  // Opens csv_path for writing (truncating it) and writes the header.
  // Throws std::runtime_error naming the path if it cannot be opened.
  ResultTable(const std::string& csv_path, std::FILE* console);
  ~ResultTable();
  ResultTable(const ResultTable&) = delete;
  ResultTable& operator=(const ResultTable&) = delete;

  void print_header();
  void add(const ResultRow& row);
  const std::vector<ResultRow>& rows() const { return rows_; }

 private:
  std::FILE* csv_ = nullptr;
  std::FILE* console_;
  std::string path_;
  std::vector<ResultRow> rows_;
};

}  // namespace cmpi::bench
