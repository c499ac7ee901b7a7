#include "bench/target_report.h"

#include <algorithm>
#include <map>

namespace cmpi::bench {
namespace {

constexpr double kMpcMinGbps = 1.5;
constexpr double kZfpMinDecodeSpeedup = 1.8;
constexpr double kCastMinGbps = 3.0;
constexpr double kFourXMinRatio = 3.9;  // 4x less the payload header
constexpr double kFourXMaxRelRmse = 0.05;
constexpr double kFourXMinGbps = 1.0;

std::string fixed(double value, int digits = 2) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

double encode_1t(const ResultRow& r) {
  return throughput_gbps(r.measurement, r.measurement.encode_seconds_1t);
}
double decode_1t(const ResultRow& r) {
  return throughput_gbps(r.measurement, r.measurement.decode_seconds_1t);
}
double decode_mt(const ResultRow& r) {
  return throughput_gbps(r.measurement, r.measurement.decode_seconds_mt);
}
double ratio(const ResultRow& r) {
  return compression_ratio(r.measurement);
}

std::vector<const ResultRow*> select(const std::vector<ResultRow>& rows, const std::string& family,
                                     const std::string& dataset) {
  std::vector<const ResultRow*> out;
  for (const auto& row : rows)
    if (row.family == family && row.dataset == dataset) out.push_back(&row);
  return out;
}

bool has_dataset(const std::vector<ResultRow>& rows, const std::string& dataset) {
  return std::any_of(rows.begin(), rows.end(),
                     [&](const ResultRow& r) { return r.dataset == dataset; });
}

TargetVerdict not_measured(std::string target, std::string why) {
  return {std::move(target), "not measured", {std::move(why)}};
}

TargetVerdict mpc_speed(const std::vector<ResultRow>& rows) {
  std::string target =
      "mpc encode and decode >= " + fixed(kMpcMinGbps, 1) + " GB/s on one core, gradients";
  auto mpc = select(rows, "mpc", "gradients");
  if (mpc.empty())
    return not_measured(target,
                        has_dataset(rows, "gradients") ? "no mpc row" : "no gradients dataset");
  const ResultRow* best = *std::max_element(mpc.begin(), mpc.end(), [](auto* a, auto* b) {
    return std::min(encode_1t(*a), decode_1t(*a)) < std::min(encode_1t(*b), decode_1t(*b));
  });
  const bool met = encode_1t(*best) >= kMpcMinGbps && decode_1t(*best) >= kMpcMinGbps;
  return {target,
          met ? "met" : "missed",
          {best->spec + ": encode " + fixed(encode_1t(*best)) + ", decode " +
           fixed(decode_1t(*best)) + " GB/s"}};
}

TargetVerdict mpc_ratio(const std::vector<ResultRow>& rows) {
  std::string target = "mpc ratio >= blosc lz4+bitshuffle ratio, activations";
  auto mpc = select(rows, "mpc", "activations");
  auto blosc = select(rows, "blosc", "activations");
  const ResultRow* reference = nullptr;
  for (auto* row : blosc)
    if (row->spec.rfind("blosc:lz4+bitshuffle", 0) == 0) reference = row;
  if (mpc.empty() || !reference)
    return not_measured(target, !has_dataset(rows, "activations") ? "no activations dataset"
                                : mpc.empty()                     ? "no mpc row"
                                                                  : "no blosc lz4+bitshuffle row");
  const ResultRow* best = *std::max_element(mpc.begin(), mpc.end(),
                                            [](auto* a, auto* b) { return ratio(*a) < ratio(*b); });
  return {target,
          ratio(*best) >= ratio(*reference) ? "met" : "missed",
          {best->spec + " " + fixed(ratio(*best), 3) + " vs " + reference->spec + " " +
           fixed(ratio(*reference), 3)}};
}

TargetVerdict zfp_scaling(const std::vector<ResultRow>& rows) {
  std::string target = "zfp all-thread decode >= " + fixed(kZfpMinDecodeSpeedup, 1) +
                       "x single-thread, gaussian, rate modes";
  std::vector<const ResultRow*> rate_rows;
  for (auto* row : select(rows, "zfp", "gaussian"))
    if (row->spec.find("mode=rate") != std::string::npos) rate_rows.push_back(row);
  if (rate_rows.empty()) return not_measured(target, "no zfp rate row on gaussian");
  if (rate_rows.front()->threads < 2) return not_measured(target, "run with --threads >= 2");
  const ResultRow* worst = nullptr;
  int met = 0;
  for (auto* row : rate_rows) {
    const double speedup = decode_1t(*row) > 0 ? decode_mt(*row) / decode_1t(*row) : 0;
    if (speedup >= kZfpMinDecodeSpeedup) ++met;
    if (!worst || speedup < decode_mt(*worst) / decode_1t(*worst)) worst = row;
  }
  return {target,
          met == int(rate_rows.size()) ? "met" : "missed",
          {std::to_string(met) + " of " + std::to_string(rate_rows.size()) + " settings with " +
           std::to_string(worst->threads) + " threads; worst " + worst->spec + " " +
           fixed(decode_mt(*worst) / decode_1t(*worst)) + "x"}};
}

TargetVerdict cast_speed(const std::vector<ResultRow>& rows, const std::string& cast) {
  std::string target =
      cast + " encode and decode >= " + fixed(kCastMinGbps, 1) + " GB/s on one core, gaussian";
  auto found = select(rows, cast, "gaussian");
  if (found.empty()) return not_measured(target, "no " + cast + " row on gaussian");
  const ResultRow& row = *found.front();
  const bool met = encode_1t(row) >= kCastMinGbps && decode_1t(row) >= kCastMinGbps;
  return {target,
          met ? "met" : "missed",
          {"encode " + fixed(encode_1t(row)) + ", decode " + fixed(decode_1t(row)) + " GB/s"}};
}

// Per lossy codec, its most accurate setting that compresses >= 4x; the
// target is met if one of them has RMSE <= 5 % at >= 1 GB/s both ways.
TargetVerdict four_x_lossy(const std::vector<ResultRow>& rows) {
  const std::string dataset = has_dataset(rows, "gradients") ? "gradients" : "gaussian";
  std::string target =
      "a >= 4x lossy setting with relative RMSE <= 5 % at >= " + fixed(kFourXMinGbps, 1) +
      " GB/s/core, " + dataset;
  std::map<std::string, const ResultRow*> best;
  for (const auto& row : rows) {
    if (row.dataset != dataset || row.lossless || row.reference || ratio(row) < kFourXMinRatio)
      continue;
    auto& slot = best[row.family];
    if (!slot || row.measurement.error.rel_rmse < slot->measurement.error.rel_rmse) slot = &row;
  }
  if (best.empty()) return not_measured(target, "no lossy setting reaches 4x");
  bool met = false;
  std::vector<std::string> details;
  for (const auto& [family, row] : best) {
    const double slowest = std::min(encode_1t(*row), decode_1t(*row));
    const bool ok = row->measurement.error.rel_rmse <= kFourXMaxRelRmse && slowest >= kFourXMinGbps;
    met = met || ok;
    details.push_back(row->spec + (ok ? " [meets]" : "") + ": ratio " + fixed(ratio(*row), 1) +
                      ", RMSE " + fixed(100 * row->measurement.error.rel_rmse, 1) + " %, " +
                      fixed(slowest) + " GB/s (slower way)");
  }
  return {target, met ? "met" : "missed", details};
}

}  // namespace

std::vector<TargetVerdict> check_targets(const std::vector<ResultRow>& rows) {
  return {mpc_speed(rows),          mpc_ratio(rows),          zfp_scaling(rows),
          cast_speed(rows, "fp16"), cast_speed(rows, "bf16"), four_x_lossy(rows)};
}

void print_target_report(const std::vector<TargetVerdict>& verdicts, std::FILE* to) {
  std::fprintf(to, "\n# targets (figures from this run; noisy if the machine was busy)\n");
  for (const auto& v : verdicts) {
    std::fprintf(to, "#   %-12s %s\n", v.status.c_str(), v.target.c_str());
    for (const auto& line : v.details) std::fprintf(to, "#                %s\n", line.c_str());
  }
}

}  // namespace cmpi::bench
