#include "bench/result_table.h"

#include <stdexcept>

namespace cmpi::bench {
namespace {

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

// Keeps the console table aligned: long specs are cut (the CSV has them whole).
std::string fit(const std::string& text, size_t width) {
  if (text.size() <= width) return text;
  return text.substr(0, width - 2) + "..";
}

}  // namespace

std::string csv_header() {
  return "dataset,codec,spec,kind,lossless,elements,ratio,bits_per_value,"
         "encode_gbps_1t,decode_gbps_1t,encode_gbps_mt,decode_gbps_mt,threads,parallelism,clock_1t,"
         "rel_rmse,max_abs_error";
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::string csv_line(const ResultRow& row) {
  const Measurement& m = row.measurement;
  const double ratio = compression_ratio(m);
  std::string line;
  line += csv_field(row.dataset) + ",";
  line += csv_field(row.family) + ",";
  line += csv_field(row.spec) + ",";
  line += std::string(row.reference ? "reference" : "codec") + ",";
  line += std::string(row.lossless ? "1" : "0") + ",";
  line += std::to_string(m.elements) + ",";
  line += format("%.6g", ratio) + ",";
  line += format("%.6g", ratio > 0 ? 32.0 / ratio : 0.0) + ",";
  line += format("%.6g", throughput_gbps(m, m.encode_seconds_1t)) + ",";
  line += format("%.6g", throughput_gbps(m, m.decode_seconds_1t)) + ",";
  line += format("%.6g", throughput_gbps(m, m.encode_seconds_mt)) + ",";
  line += format("%.6g", throughput_gbps(m, m.decode_seconds_mt)) + ",";
  line += std::to_string(row.threads) + ",";
  line += csv_field(row.parallelism) + ",";
  line += csv_field(row.clock_1t) + ",";
  line += format("%.6g", m.error.rel_rmse) + ",";
  line += format("%.6g", m.error.max_abs_error);
  return line;
}

ResultTable::ResultTable(const std::string& csv_path, std::FILE* console)
    : console_(console), path_(csv_path) {
  csv_ = std::fopen(csv_path.c_str(), "w");
  if (!csv_) throw std::runtime_error("--csv '" + csv_path + "': cannot open for writing");
  std::fprintf(csv_, "%s\n", csv_header().c_str());
  std::fflush(csv_);
}

ResultTable::~ResultTable() {
  if (csv_) std::fclose(csv_);
}

void ResultTable::print_header() {
  std::fprintf(console_, "%-11s %-36s %8s %6s | %8s %8s | %8s %8s | %9s %9s  %s\n", "dataset",
               "spec", "ratio", "bits", "enc 1T", "dec 1T", "enc nT", "dec nT", "rel RMSE",
               "max err", "nT via");
  std::fprintf(console_, "%-11s %-36s %8s %6s | %8s %8s | %8s %8s | %9s %9s\n", "", "", "", "/val",
               "GB/s", "GB/s", "GB/s", "GB/s", "", "abs");
  std::fflush(console_);
}

void ResultTable::add(const ResultRow& row) {
  const Measurement& m = row.measurement;
  const double ratio = compression_ratio(m);
  std::fprintf(console_, "%-11s %-36s %8.3f %6.2f | %8.3f %8.3f | %8.3f %8.3f | %9.3g %9.3g  %s\n",
               fit(row.dataset, 11).c_str(), fit(row.spec, 36).c_str(), ratio,
               ratio > 0 ? 32.0 / ratio : 0.0, throughput_gbps(m, m.encode_seconds_1t),
               throughput_gbps(m, m.decode_seconds_1t), throughput_gbps(m, m.encode_seconds_mt),
               throughput_gbps(m, m.decode_seconds_mt), m.error.rel_rmse, m.error.max_abs_error,
               row.parallelism.c_str());
  std::fflush(console_);
  std::fprintf(csv_, "%s\n", csv_line(row).c_str());
  if (std::fflush(csv_) != 0) throw std::runtime_error("--csv '" + path_ + "': write failed");
  rows_.push_back(row);
}

}  // namespace cmpi::bench
