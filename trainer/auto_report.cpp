#include "trainer/auto_report.h"

#include <cstdio>

namespace cmpi::trainer {
namespace {

std::string number(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", value);
  return buf;
}

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

}  // namespace

std::string auto_decisions_json(const std::vector<comm::AutoDecision>& decisions,
                                double agreement_ms) {
  std::string out = "{\"ms\":" + number(agreement_ms) + ",\"decisions\":[";
  for (size_t i = 0; i < decisions.size(); ++i) {
    const comm::AutoDecision& d = decisions[i];
    out += i ? ",{" : "{";
    out += "\"group\":" + quoted(comm::to_string(d.group));
    out += ",\"op\":" + quoted(comm::to_string(d.op));
    out += ",\"role\":" + quoted(comm::to_string(d.role));
    out += ",\"locality\":" + quoted(comm::to_string(d.locality));
    out += ",\"codec\":" + quoted(d.codec);
    out += std::string(",\"changed\":") + (d.changed ? "true" : "false");
    out += ",\"reason\":" + quoted(d.reason);
    out += ",\"predicted_ms\":" + number(d.predicted_ms);
    out += std::string(",\"predicted_from\":") +
           (d.predicted_from_measurement ? "\"measured\"" : "\"model\"");
    out += ",\"raw_ms\":" + number(d.raw_ms);
    out += ",\"fastest\":" + quoted(d.fastest);
    if (!d.runner_up.empty()) {
      out += ",\"runner_up\":" + quoted(d.runner_up);
      out += ",\"runner_up_ms\":" + number(d.runner_up_ms);
    }
    out += ",\"link_mbit_s\":" + number(d.link_mbit_s);
    out += ",\"rel_error\":" + number(d.rel_error);
    out += ",\"steps_multiplier\":" + number(d.steps_multiplier);
    if (!d.verdict.empty()) out += ",\"verdict\":" + quoted(d.verdict);
    if (!d.demoted.empty()) {
      out += ",\"demoted\":[";
      for (size_t k = 0; k < d.demoted.size(); ++k) out += (k ? "," : "") + quoted(d.demoted[k]);
      out += "]";
    }
    out += ",\"previous_codec\":" + quoted(d.previous_codec);
    out += ",\"previous_predicted_ms\":" + number(d.previous_predicted_ms);
    out += ",\"measured_ms\":" + number(d.measured_ms) + "}";
  }
  return out + "]}";
}

bool worth_a_line(const comm::AutoDecision& d) {
  return d.changed || !d.verdict.empty();
}

std::string auto_change_line(int64_t step, const comm::AutoDecision& d) {
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "auto: step %lld %s %s %s (%s): %s -> %s (predicted %.1f ms, raw %.1f ms%s%s%s; "
                "link %.1f Mbit/s; error %.2g; %s)",
                (long long)step, comm::to_string(d.group), comm::to_string(d.op),
                comm::to_string(d.role), comm::to_string(d.locality), d.previous_codec.c_str(),
                d.codec.c_str(), d.predicted_ms, d.raw_ms,
                d.runner_up.empty() ? "" : ", runner-up ", d.runner_up.c_str(),
                d.runner_up.empty() ? "" : (" " + number(d.runner_up_ms) + " ms").c_str(),
                d.link_mbit_s, d.rel_error, d.reason.c_str());
  return buf;
}

}  // namespace cmpi::trainer
