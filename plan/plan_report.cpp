#include "plan/plan_report.h"

#include <cstdio>

#include "config/units.h"
#include "parallel/pipeline/pipeline_stages.h"
#include "plan/plan_hardware.h"

namespace cmpi::plan {
namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

std::string memory_json(const parallel::MemoryEstimate& m) {
  char buf[768];
  std::snprintf(buf, sizeof buf,
                "{\"stage\":%d,\"parameters_bytes\":%.0Lf,\"gradients_bytes\":%.0Lf,"
                "\"optimizer_bytes\":%.0Lf,\"activation_bytes\":%.0Lf,\"buffer_bytes\":%.0Lf,"
                "\"scratch_bytes\":%.0Lf,\"pipeline_send_bytes\":%.0Lf,\"outer_state_bytes\":%.0Lf,"
                "\"runtime_bytes\":%.0Lf,"
                "\"attention_score_bytes\":%.0Lf,\"state_bytes\":%.0Lf,\"total_bytes\":%.0Lf,"
                "\"dominant\":\"%s\"}",
                m.stage, m.parameter_bytes, m.gradient_bytes, m.optimizer_bytes, m.activation_bytes,
                m.buffer_bytes, m.scratch_bytes, m.pipeline_send_bytes, m.outer_state_bytes,
                m.runtime_bytes, m.attention_score_bytes, m.state(), m.total(), m.dominant().name);
  return buf;
}

}  // namespace

std::string plan_table(const StepPlan& p, const PlanOptions& o, const std::string& source) {
  char buf[512];
  std::string out;
  std::snprintf(buf, sizeof buf,
                "plan: %s on %d ranks (%d per node) | layout %s | %lld micro-batches per rank | "
                "preset %s\n",
                source.c_str(), o.world_size, o.ranks_per_node, p.dims.to_string().c_str(),
                (long long)p.micro_batches, p.preset.c_str());
  out += buf;
  if (o.on_device()) {
    std::snprintf(buf, sizeof buf,
                  "model: links intra %s (x %.2f), inter %s (x %.2f) | device %s | codecs: the "
                  "device's where its profile has them\n",
                  o.intra.to_string().c_str(),
                  o.intra_link_efficiency > 0 ? o.intra_link_efficiency : o.link_efficiency,
                  o.inter.to_string().c_str(), o.link_efficiency,
                  describe_device(o, p.precision).c_str());
  } else {
    std::snprintf(
        buf, sizeof buf,
        "model: links intra %s, inter %s | compute %.3g GFLOP/s per rank | codecs at %.3g x "
        "one core here\n",
        o.intra.to_string().c_str(), o.inter.to_string().c_str(), o.flops_per_second / 1e9,
        o.codec_scale);
  }
  out += buf;
  if (o.cores > 0) {
    char stretch[48];
    std::snprintf(stretch, sizeof stretch, " | compute x %.3g", p.compute_stretch);
    std::snprintf(
        buf, sizeof buf, "cores: %d ranks share %.3g cores, waits %s%s%s\n", o.world_size, o.cores,
        o.spinning_waits ? "poll" : "sleep", p.compute_stretch > 1 ? stretch : "",
        p.cpu_bound_seconds > 0
            ? (" | time-sharing bound " + config::human_seconds(p.cpu_bound_seconds)).c_str()
            : "");
    out += buf;
  }
  const auto& m = p.memory;
  out += "memory per rank (pipeline stage " + std::to_string(m.stage) + "): parameters " +
         config::human_bytes(double(m.parameter_bytes)) + ", gradients " +
         config::human_bytes(double(m.gradient_bytes)) + ", optimizer " +
         config::human_bytes(double(m.optimizer_bytes)) + ", activations " +
         config::human_bytes(double(m.activation_bytes)) + ", buffers " +
         config::human_bytes(double(m.buffer_bytes)) + ", comm scratch " +
         config::human_bytes(double(m.scratch_bytes)) + ", pipeline sends " +
         config::human_bytes(double(m.pipeline_send_bytes)) +
         (m.outer_state_bytes > 0
              ? ", DiLoCo outer state " + config::human_bytes(double(m.outer_state_bytes))
              : std::string()) +
         ", runtime " + config::human_bytes(double(m.runtime_bytes)) + " = " +
         config::human_bytes(double(m.total())) + " (largest: " + m.dominant().name +
         (m.attention_score_bytes > 0
              ? "; attention scores " + config::human_bytes(double(m.attention_score_bytes)) +
                    " of the activations"
              : std::string()) +
         ")\n";
  if (p.precision != config::Precision::kFp32)
    out += std::string("precision: ") + config::name_of(p.precision) +
           " compute: activations 2 bytes a value (logits float32); float32 master weights, "
           "gradients and AdamW moments; pp activations and tp activation gradients travel as "
           "16-bit words; tp forward sums " +
           (p.tp_forward_sum == "compute" ? std::string("too (parallel.tp_forward_sum: compute)")
                                          : std::string("in float32")) +
           "\n";
  if (p.dp_sync == "diloco")
    out +=
        "dp sync: diloco: no gradient crosses dp; the pseudo-gradients (role "
        "pseudo_gradient) are averaged once every " +
        std::to_string(p.sync_every) + " steps (" + std::to_string(p.fragments) + " fragment(s), " +
        std::to_string(p.sync_every / p.fragments) +
        " steps apart): the dp rows below are their per-step average; the outer weights "
        "and momentum are two float32 copies of the parameters (memory: outer state)" +
        (p.diloco_warmup_steps > 0
             ? "; the run's first " + std::to_string(p.diloco_warmup_steps) +
                   " steps (diloco.warmup_steps) reduce gradients every step as dp_sync: "
                   "every_step does, which the rows leave out"
             : std::string()) +
        "\n";
  if (p.stages.size() > 1)
    out += "pipeline balance: " + p.pipeline_balance + ", layers per stage " +
           parallel::stage_layers_text(p.stage_layers) + "\n";
  for (const StagePlan& sp : p.stages) {
    const char* ends = sp.shape.has_embedding && sp.shape.has_head ? " + embedding + head"
                       : sp.shape.has_embedding                    ? " + embedding"
                       : sp.shape.has_head                         ? " + head"
                                                                   : "";
    std::snprintf(buf, sizeof buf,
                  "stage %d: %lld layers%s, %s of parameters, %s of memory per rank (largest: "
                  "%s %s) | forward %s, backward %s per micro-batch\n",
                  sp.shape.stage, (long long)sp.shape.layers, ends,
                  config::human_bytes(double(sp.shape.parameters) * 4).c_str(),
                  config::human_bytes(double(sp.memory.total())).c_str(), sp.memory.dominant().name,
                  config::human_bytes(double(sp.memory.dominant().bytes)).c_str(),
                  config::human_seconds(sp.forward_seconds).c_str(),
                  config::human_seconds(sp.backward_seconds).c_str());
    out += buf;
    out += "  group where  calls  raw/rank    wire/rank   ratio  time       exposed    codecs\n";
    for (const GroupCost& g : sp.groups) {
      std::snprintf(buf, sizeof buf, "  %-5s %-5s %6lld  %-10s  %-10s  %5.2f  %-9s  %-9s  %s\n",
                    comm::to_string(g.group), g.locality.c_str(), (long long)g.calls,
                    config::human_bytes(g.raw_bytes).c_str(),
                    config::human_bytes(g.wire_bytes).c_str(),
                    g.wire_bytes > 0 ? g.raw_bytes / g.wire_bytes : 1.0,
                    config::human_seconds(g.seconds).c_str(),
                    config::human_seconds(g.exposed_seconds).c_str(), g.codecs.c_str());
      out += buf;
    }
  }
  // Every part of the step, so that the bound is seen to be the largest.
  std::string parts;
  for (const StepPart& part : p.parts)
    parts += part.name + " " + config::human_seconds(part.seconds) + ", ";
  std::snprintf(buf, sizeof buf,
                "step: %s (%spipeline bubble %.0f %%) | %.0f tokens/s | bound by %s\n",
                config::human_seconds(p.step_seconds).c_str(), parts.c_str(),
                100 * p.bubble_fraction, p.tokens_per_second, p.bound_by.c_str());
  out += buf;
  if (o.on_device()) {
    const double peak = o.device->peak_for(p.precision);
    std::snprintf(buf, sizeof buf,
                  "achieved: %.1f TFLOP/s per rank (%.0f %% of the %s peak; FLOPs with "
                  "recomputation, plan/model_flops.h)\n",
                  p.hardware_flops_per_rank / 1e12, 100 * p.hardware_flops_per_rank / peak,
                  config::name_of(p.precision));
    out += buf;
  }
  return out;
}

std::string plan_json(const StepPlan& p, const PlanOptions& o) {
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "{\"preset\":%s,\"layout\":%s,\"ranks\":%d,\"ranks_per_node\":%d,"
                "\"micro_batches\":%lld,\"step_seconds\":%.6g,\"compute_seconds\":%.6g,"
                "\"bubble_fraction\":%.4f,\"tokens_per_s\":%.1f,\"bound_by\":%s,"
                "\"cpu_bound_seconds\":%.6g,\"compute_stretch\":%.6g,\"flops_per_second\":%.6g,"
                "\"cores\":%.6g,\"hardware_flops_per_rank\":%.6g,\"device\":%s,\"stack\":%s,"
                "\"codec_scale\":%.6g,\"pipeline_balance\":%s,\"memory\":",
                json_string(p.preset).c_str(), json_string(p.dims.to_string()).c_str(),
                o.world_size, o.ranks_per_node, (long long)p.micro_batches, p.step_seconds,
                p.compute_seconds, p.bubble_fraction, p.tokens_per_second,
                json_string(p.bound_by).c_str(), p.cpu_bound_seconds, p.compute_stretch,
                o.flops_per_second, o.cores, p.hardware_flops_per_rank,
                json_string(o.device ? o.device->name : "cpu").c_str(),
                json_string(o.on_device() ? o.stack.name : "").c_str(), o.codec_scale,
                json_string(p.pipeline_balance).c_str());
  std::string out = std::string(buf) + memory_json(p.memory) + ",\"step_parts\":{";
  for (size_t i = 0; i < p.parts.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%s:%.6g", i ? "," : "", json_string(p.parts[i].name).c_str(),
                  p.parts[i].seconds);
    out += buf;
  }
  out += "},\"stages\":[";
  for (size_t s = 0; s < p.stages.size(); ++s) {
    const StagePlan& sp = p.stages[s];
    std::snprintf(buf, sizeof buf,
                  "%s{\"stage\":%d,\"layers\":%lld,\"parameters\":%lld,\"forward_seconds\":%.6g,"
                  "\"backward_seconds\":%.6g,\"memory\":",
                  s ? "," : "", sp.shape.stage, (long long)sp.shape.layers,
                  (long long)sp.shape.parameters, sp.forward_seconds, sp.backward_seconds);
    out += std::string(buf) + memory_json(sp.memory) + ",\"groups\":{";
    for (size_t i = 0; i < sp.groups.size(); ++i) {
      const GroupCost& g = sp.groups[i];
      std::snprintf(buf, sizeof buf,
                    "%s\"%s\":{\"locality\":\"%s\",\"calls\":%lld,\"raw_bytes\":%.0f,"
                    "\"wire_bytes\":%.0f,\"seconds\":%.6g,\"exposed_seconds\":%.6g,\"codecs\":%s}",
                    i ? "," : "", comm::to_string(g.group), g.locality.c_str(), (long long)g.calls,
                    g.raw_bytes, g.wire_bytes, g.seconds, g.exposed_seconds,
                    json_string(g.codecs).c_str());
      out += buf;
    }
    out += "}}";
  }
  return out + "]}";
}

const StepPlan& fastest(const std::vector<StepPlan>& plans) {
  const StepPlan* best = &plans.front();
  for (const StepPlan& p : plans)
    if (p.step_seconds < best->step_seconds) best = &p;
  return *best;
}

std::string presets_table(const std::vector<StepPlan>& plans) {
  std::string out = "preset     step        tokens/s    wire/rank/step  bound by\n";
  char buf[256];
  for (const StepPlan& p : plans) {
    double wire = 0;
    for (const StagePlan& sp : p.stages)
      for (const GroupCost& g : sp.groups) wire += g.wire_bytes;
    wire /= double(p.stages.size());
    std::snprintf(buf, sizeof buf, "%-10s %-10s  %10.0f  %-14s  %s\n", p.preset.c_str(),
                  config::human_seconds(p.step_seconds).c_str(), p.tokens_per_second,
                  config::human_bytes(wire).c_str(), p.bound_by.c_str());
    out += buf;
  }
  const StepPlan& best = fastest(plans);
  std::snprintf(buf, sizeof buf, "would choose: %s (%.2fx the uncompressed step rate)\n",
                best.preset.c_str(), plans.front().step_seconds / best.step_seconds);
  return out + buf;
}

std::string presets_json(const std::vector<StepPlan>& plans) {
  std::string out = "{\"presets\":[";
  char buf[256];
  for (size_t i = 0; i < plans.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s{\"preset\":%s,\"step_seconds\":%.6g,\"tokens_per_s\":%.1f}",
                  i ? "," : "", json_string(plans[i].preset).c_str(), plans[i].step_seconds,
                  plans[i].tokens_per_second);
    out += buf;
  }
  return out + "],\"choice\":" + json_string(fastest(plans).preset) + "}";
}

}  // namespace cmpi::plan
