#include "bench/collective_bench_report.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "bench/collective_bench_options.h"
#include "bench/result_table.h"

namespace cmpi::bench {
namespace {

std::string number(double value, const char* format = "%.6g") {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// "812us", "3.41ms", "2.05s": latencies span six decades in one table.
std::string duration(double seconds) {
  if (seconds < 1e-3) return number(seconds * 1e6, "%.1fus");
  if (seconds < 1) return number(seconds * 1e3, "%.2fms");
  return number(seconds, "%.3fs");
}

std::string or_dash(double value, const std::string& text) {
  return value > 0 ? text : "-";
}

}  // namespace

std::string collective_csv_header() {
  return "op,size_bytes,ranks,variant,compressed,iterations,median_s,min_s,algbw_MBps,"
         "wire_bytes_per_rank,ratio,speedup_vs_mpi,rel_error,encode_s,decode_s,codec_s,"
         "link_bits_per_s,wire_bound_s,bound_ratio,data";
}

std::string collective_csv_line(const CollectiveRow& row) {
  const double algbw = row.median_seconds > 0 ? double(row.bytes) / row.median_seconds / 1e6 : 0;
  std::string line;
  auto add = [&line](const std::string& field) {
    if (!line.empty()) line += ',';
    line += field;
  };
  add(csv_field(row.op));
  add(std::to_string(row.bytes));
  add(std::to_string(row.ranks));
  add(csv_field(row.variant));
  add(number(row.compressed, "%.3g"));
  add(std::to_string(row.iterations));
  add(number(row.median_seconds));
  add(number(row.min_seconds));
  add(number(algbw));
  add(number(row.wire_bytes_per_rank, "%.0f"));
  add(number(row.ratio));
  add(number(row.speedup));
  add(number(row.rel_error));
  add(number(row.encode_seconds));
  add(number(row.decode_seconds));
  add(number(row.codec_seconds));
  add(number(row.link_bits_per_second, "%.0f"));
  add(number(row.wire_bound_seconds));
  add(number(row.bound_ratio));
  add(csv_field(row.data));
  return line;
}

CollectiveTable::CollectiveTable(const std::string& csv_path, std::FILE* console)
    : console_(console), path_(csv_path) {
  if (csv_path.empty()) return;
  csv_ = std::fopen(csv_path.c_str(), "w");
  if (!csv_)
    throw std::runtime_error("--csv '" + csv_path +
                             "': cannot open for writing: " + std::strerror(errno));
  std::fprintf(csv_, "%s\n", collective_csv_header().c_str());
  std::fflush(csv_);
}

CollectiveTable::~CollectiveTable() {
  if (csv_) std::fclose(csv_);
}

void CollectiveTable::begin_point(const std::string& op, size_t bytes, int ranks) {
  std::fprintf(console_, "\n# %s %s, %d ranks\n", op.c_str(), format_byte_size(bytes).c_str(),
               ranks);
  std::fprintf(console_, "%-24s %5s %10s %10s %9s %12s %7s %8s %9s %10s %10s %7s\n", "variant",
               "comp", "median", "min", "MB/s", "wire B/rank", "ratio", "speedup", "rel_err",
               "codec", "wire_bnd", "/bound");
  std::fflush(console_);
}

void CollectiveTable::add(const CollectiveRow& row) {
  const double algbw = row.median_seconds > 0 ? double(row.bytes) / row.median_seconds / 1e6 : 0;
  std::fprintf(console_, "%-24s %5.2f %10s %10s %9.1f %12.0f %7.2f %8.2f %9.2e %10s %10s %7s\n",
               row.variant.c_str(), row.compressed, duration(row.median_seconds).c_str(),
               duration(row.min_seconds).c_str(), algbw, row.wire_bytes_per_rank, row.ratio,
               row.speedup, row.rel_error,
               or_dash(row.codec_seconds, duration(row.codec_seconds)).c_str(),
               or_dash(row.wire_bound_seconds, duration(row.wire_bound_seconds)).c_str(),
               or_dash(row.bound_ratio, number(row.bound_ratio, "%.2f")).c_str());
  std::fflush(console_);
  if (!csv_) return;
  std::fprintf(csv_, "%s\n", collective_csv_line(row).c_str());
  std::fflush(csv_);
  if (std::ferror(csv_)) throw std::runtime_error("--csv '" + path_ + "': write failed");
}

}  // namespace cmpi::bench
