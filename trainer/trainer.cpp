#include "trainer/trainer.h"
#include "trainer/device_memory.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>
#include <utility>

#include "checkpoint/checkpoint_manager.h"
#include "checkpoint/rank_agreement.h"
#include "comm/clock.h"
#include "comm/test_faults.h"
#include "comm/watchdog.h"
#include "config/run_paths.h"
#include "hf/hf_pretrained.h"
#include "io/atomic_file.h"
#include "io/directories.h"
#include "models/parallelize_model.h"
#include "models/train_model.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/zero/data_parallel_optimizer.h"
#include "plan/model_flops.h"
#include "trainer/attempt_log.h"
#include "trainer/auto_report.h"
#include "trainer/eta.h"
#include "trainer/flops_meter.h"
#include "trainer/lr_schedule.h"
#include "trainer/metrics.h"
#include "trainer/nonfinite_guard.h"
#include "trainer/stage_traffic_log.h"
#include "trainer/step_report.h"

namespace cmpi::trainer {

struct Trainer::Impl {
  Impl(const config::Config& c, parallel::ProcessGroups& g, TrainerOptions o)
      : config(c), groups(g), options(std::move(o)) {}

  int64_t print_every() const {
    return options.print_every >= 0 ? options.print_every : config.log.every;
  }
  // metrics.jsonl of the steps before a resumed checkpoint's, to keep.
  std::string earlier_metrics(const std::string& path) const;
  // Where the step's time leaves the run: ETA and the per-rank FLOP rates.
  void time_step(StepRecord& r, double step_seconds, double wall_seconds,
                 double evaluation_seconds);
  // The step record's memory object: the optimizer's state and the model's
  // own figure.
  std::string memory_json() const {
    const auto [key, bytes] = model->memory_extra();
    return optimizer_memory_json(model->optimizer(), key, bytes);
  }

  // What one step measured around the model's train_step.
  struct StepTiming {
    double seconds = 0;
    double cpu_ms = -1;  // negative: not measured
    comm::OpCounters before, after;
  };

  // Test fault injection (TrainerOptions::kill_step/kill_rank): the chosen
  // rank dies abruptly at the start of the chosen step, as a crashed node
  // would, for the restart and watchdog tests; CMPI_TEST_FAULT=slowing
  // (comm/test_faults.h) makes one rank slower step by step.
  void inject_test_fault(int64_t step) const {
    if (step + 1 == options.kill_step && groups.world_rank() == options.kill_rank) {
      std::fflush(stdout);
      std::raise(SIGKILL);
    }
    sleep_ms(faults.step_delay_ms(groups.world_rank(), step + 1));
  }
  static void sleep_ms(uint64_t ms) {
    if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
  // Long work every rank starts together: under run.timeout auto the
  // watchdog waits up to its long allowance in this step and the next.
  void expect_long_work() const {
    if (options.watchdog) options.watchdog->expect_long_work();
  }
  void save_checkpoint(int64_t skipped_steps) const {
    expect_long_work();
    sleep_ms(faults.save_delay_ms(groups.world_rank()));  // tests only
    checkpoints->save(steps_done, skipped_steps);
  }
  // The step's record, built in one place from what the step produced; the
  // run's totals (losses, loss scales, skipped and overflow steps) follow it.
  StepRecord record_step(int64_t step, const models::Outcome& outcome, const StepTiming& timing,
                         const StepVerdict& verdict, TrainResult& result) const;
  // The validation loss after the steps eval.every names and after the last
  // one (not after a step that stops the run).
  void evaluate_if_due(int64_t step, const StepVerdict& verdict, StepRecord& r,
                       TrainResult& result) const;
  // The guard's verdict told: a note on the console, a warning on a
  // non-finite step, and for a stop every rank's pending save published
  // before TrainingStopped is thrown.
  void act_on(const StepVerdict& verdict, bool is_root) const;

  const config::Config& config;
  parallel::ProcessGroups& groups;
  TrainerOptions options;
  std::unique_ptr<models::TrainModel> model;
  std::unique_ptr<checkpoint::CheckpointManager> checkpoints;
  std::unique_ptr<NonfiniteGuard> guard;
  LrSchedule schedule;
  FlopsMeter flops;
  EtaClock eta;
  int64_t steps_done = 0;      // where run() starts, then how far it got
  int64_t skipped_before = 0;  // skipped steps before a resumed checkpoint
  // The loss of the last step done, which preset auto weighs at the next
  // step's decision: in the rank state (training/previous_loss), so that a
  // resumed run's first decision weighs what the saving run's would have.
  double previous_loss = comm::kNoPreviousLoss;
  checkpoint::GeneratorPart previous_loss_part();
  // Tests only (CMPI_TEST_FAULT, checked when the session started).
  const comm::TestFaults faults = comm::TestFaults::from_environment();
};

// training/previous_loss: previous_loss as its 8 bytes.
checkpoint::GeneratorPart Trainer::Impl::previous_loss_part() {
  constexpr const char* kName = "training/previous_loss";
  return checkpoint::GeneratorPart{
      kName,
      [this] { return std::string(reinterpret_cast<const char*>(&previous_loss), sizeof(double)); },
      [this](const std::string& bytes) {
        if (bytes.size() != sizeof(double))
          throw std::runtime_error(std::string("rank state ") + kName + ": " +
                                   std::to_string(bytes.size()) + " bytes, not a double's 8");
        std::memcpy(&previous_loss, bytes.data(), sizeof(double));
      }};
}

// The model first (it opens the data and builds every group's state), then
// what the loop adds around it: the schedule, the guard, the checkpoint
// manager, which restores --resume into the finished model and optimizer
// (or, starting afresh, loads model.init_from's pretrained weights).
Trainer::Trainer(const config::Config& config, parallel::ProcessGroups& groups,
                 TrainerOptions options)
    : impl_(std::make_unique<Impl>(config, groups, std::move(options))) {
  Impl& s = *impl_;
  models::ModelBuildOptions build;
  build.source = s.options.source;
  build.dump_tensors = !s.options.dump_tensors_dir.empty();
  build.cuda_device = s.options.cuda_device;
  s.model = models::parallelize_model(config, groups, std::move(build));
  const auto& t = config.training;
  s.schedule.peak = t.lr;
  s.schedule.min_lr = t.min_lr;
  s.schedule.warmup_steps = t.warmup_steps;
  s.schedule.total_steps = t.steps;
  s.guard = std::make_unique<NonfiniteGuard>(t, groups);
  // The model's FLOPs (a GPT's; none for a ResNet) over every rank.
  s.flops = FlopsMeter(plan::model_flops_per_token(config, groups.dims()),
                       double(t.global_batch * s.model->tokens_per_sample()),
                       groups.dims().world_size(), s.options.peak_flops);
  checkpoint::CheckpointSettings settings;
  settings.root = config::checkpoint_root(config);
  settings.every = config.checkpoint.every;
  settings.keep_last = config.checkpoint.keep_last;
  settings.resolved_config = s.options.resolved_config;
  settings.print = s.print_every() > 0;
  settings.async = config.checkpoint.async;
  auto parts = s.model->checkpoint_parts();
  if (groups.policy().config().preset == "auto") parts.generators.push_back(s.previous_loss_part());
  s.checkpoints = std::make_unique<checkpoint::CheckpointManager>(
      std::move(settings), groups,
      checkpoint::checkpoint_layout(groups.dims(), config.parallel.bidirectional),
      std::move(parts));
  if (!s.options.resume_path.empty()) {
    const auto resume = s.checkpoints->restore(s.options.resume_path);
    s.steps_done = resume.step;
    s.skipped_before = resume.skipped_steps;
  } else if (!config.model.init_from.empty()) {
    // Every rank reads the tensors its parameters need and cuts its slice.
    std::unique_ptr<hf::HfPretrained> pretrained;
    checkpoint::agree_or_throw(groups.world().mpi(), [&] {
      try {
        pretrained = std::make_unique<hf::HfPretrained>(
            hf::HfPretrained::open(config.model.init_from, config.model));
      } catch (const std::exception& e) {
        throw std::runtime_error(std::string("model.init_from: ") + e.what());
      }
    });
    s.checkpoints->initialise(
        [&](const std::string& name, const std::vector<int64_t>&) {
          return pretrained->weights(name);
        },
        config.model.init_from);
  }
}

Trainer::~Trainer() = default;

void Trainer::Impl::time_step(StepRecord& r, double step_seconds, double wall_seconds,
                              double evaluation_seconds) {
  const Utilization u = flops.over(1, step_seconds);
  r.tflops_per_rank = u.tflops_per_rank;
  r.mfu = u.mfu;
  r.hfu = u.hfu;
  eta.step_took(wall_seconds - evaluation_seconds);
  if (evaluation_seconds > 0) eta.evaluation_took(evaluation_seconds);
  r.eta_seconds =
      eta.remaining_seconds(config.training.steps - r.step,
                            evaluations_after(r.step, config.training.steps, config.eval.every));
}

namespace {

// What metrics.jsonl's earlier records (a resumed run's) say about the run's
// beginning: step 1's loss and the first validation loss.
void read_history(const std::string& earlier, RunHistory& history) {
  size_t begin = 0;
  while (begin < earlier.size()) {
    const size_t end = earlier.find('\n', begin);
    const std::string line =
        earlier.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    begin = end == std::string::npos ? earlier.size() : end + 1;
    if (const auto loss = number_field(line, "loss"); loss && !history.has_first_loss) {
      history.has_first_loss = true;
      history.first_loss = *loss;
    }
    const auto val = number_field(line, "val_loss");
    const auto step = number_field(line, "step");
    if (val && step && !history.has_first_val_loss) {
      history.has_first_val_loss = true;
      history.first_val_step = int64_t(*step);
      history.first_val_loss = *val;
    }
  }
}

}  // namespace

std::string Trainer::Impl::earlier_metrics(const std::string& path) const {
  std::ifstream in(path);
  std::string kept, line;
  while (std::getline(in, line)) {
    const size_t at = line.find("{\"step\":");
    if (at != 0 || std::stoll(line.substr(8)) > steps_done) break;
    kept += line + "\n";
  }
  return kept;
}

StepRecord Trainer::Impl::record_step(int64_t step, const models::Outcome& outcome,
                                      const StepTiming& timing, const StepVerdict& verdict,
                                      TrainResult& result) const {
  result.losses.push_back(outcome.loss);
  if (outcome.accuracy >= 0) result.accuracies.push_back(outcome.accuracy);
  result.skipped_steps = skipped_before + guard->skipped_steps();

  StepRecord r;
  r.step = step + 1;
  r.total_steps = config.training.steps;
  r.loss = outcome.loss;
  r.loss_floor = result.loss_floor;
  r.lr = schedule.at(step);
  r.grad_norm = model->last_grad_norm();
  r.skipped = verdict.skipped;
  r.skipped_steps = result.skipped_steps;
  r.loss_scale = model->loss_scale();
  result.loss_scale = r.loss_scale;
  if (r.loss_scale > 0) result.loss_scales.push_back(r.loss_scale);
  result.overflow_steps = guard->overflow_steps();
  r.step_ms = timing.seconds * 1e3;
  r.cpu_ms = timing.cpu_ms;
  // Throughput counts tokens for language models, images for classifiers.
  const int64_t tokens_per_sample = model->tokens_per_sample();
  if (tokens_per_sample > 0) {
    r.tokens_per_second = double(config.training.global_batch * tokens_per_sample) / timing.seconds;
  } else {
    r.accuracy = outcome.accuracy;
    r.images_per_second = double(config.training.global_batch) / timing.seconds;
  }
  record_step_traffic(r, timing.before, timing.after, model->optimizer());
  const models::OuterSync sync = model->last_outer_sync();
  r.outer_sync = sync.fragments;
  r.outer_sync_ms = sync.seconds * 1e3;
  return r;
}

void Trainer::Impl::evaluate_if_due(int64_t step, const StepVerdict& verdict, StepRecord& r,
                                    TrainResult& result) const {
  const int64_t every = config.eval.every;
  const bool due = every > 0 && ((step + 1) % every == 0 || step + 1 == config.training.steps);
  if (!due || verdict.stop) return;
  expect_long_work();
  const models::Outcome evaluation = model->evaluate();
  r.has_val_loss = true;
  r.val_loss = evaluation.loss;
  result.val_losses.emplace_back(step + 1, evaluation.loss);
  if (evaluation.accuracy >= 0) {
    r.val_accuracy = evaluation.accuracy;
    result.val_accuracies.emplace_back(step + 1, evaluation.accuracy);
  }
}

void Trainer::Impl::act_on(const StepVerdict& verdict, bool is_root) const {
  if (verdict.stop) {
    // Every rank stops here together: a save in flight is still published.
    expect_long_work();
    checkpoints->finish();
    throw TrainingStopped(verdict.message, is_root);
  }
  if (!verdict.note.empty() && is_root && print_every() > 0) {
    std::printf("%s\n", verdict.note.c_str());
    std::fflush(stdout);
  }
  if (verdict.nonfinite && is_root) {
    std::fprintf(stderr, "warning: %s\n", verdict.message.c_str());
    std::fflush(stderr);
  }
}

TrainResult Trainer::run() {
  Impl& s = *impl_;
  auto& model = *s.model;
  const auto& t = s.config.training;
  const bool is_root = s.groups.world_rank() == 0;
  const int64_t print_every = s.print_every();

  std::string metrics_path, tensorboard_dir, attempts_path;
  if (is_root && !s.options.run_dir.empty()) {
    io::create_directories(s.options.run_dir);
    if (!s.options.resolved_config.empty())
      io::write_file_atomically(s.options.run_dir + "/config.yaml", s.options.resolved_config);
    if (s.config.log.metrics_jsonl) metrics_path = s.options.run_dir + "/metrics.jsonl";
    if (s.config.log.tensorboard) tensorboard_dir = s.options.run_dir + "/tensorboard";
    attempts_path = s.options.run_dir + "/attempts.jsonl";
  }
  // A resumed run continues the metrics of the steps before its checkpoint.
  const std::string earlier =
      metrics_path.empty() || s.steps_done == 0 ? "" : s.earlier_metrics(metrics_path);
  if (!s.options.dump_tensors_dir.empty() && is_root)
    io::create_directories(s.options.dump_tensors_dir);
  MetricsLog log(metrics_path, is_root ? print_every : 0, earlier, tensorboard_dir, s.steps_done);
  StageTrafficLog stage_traffic(s.options.stage_traffic_dir, s.groups);
  AttemptLog attempts(attempts_path, s.options.resume_requested, s.steps_done);

  TrainResult result;
  result.history.steps_before = s.steps_done;
  read_history(earlier, result.history);
  result.loss_floor = model.loss_floor();
  result.parameters = model.parameter_count();
  if (is_root && print_every > 0) {
    std::printf("%s\n", model.describe().c_str());
    std::fflush(stdout);
  }
  // Throughput counts tokens for language models, images for classifiers.
  const int64_t tokens_per_sample = model.tokens_per_sample();

  const auto run_start = comm::Clock::now();
  const int64_t first_step = s.steps_done;
  const bool adaptive = s.groups.policy().config().preset == "auto";
  auto previous_end = run_start;  // where the last iteration ended, for ETA
  for (int64_t step = first_step; step < t.steps; ++step) {
    if (s.options.watchdog) s.options.watchdog->note_step(step + 1);
    s.inject_test_fault(step);
    Impl::StepTiming timing;
    timing.before = comm_totals(s.groups, model.extra_groups());
    const double cpu_start = process_cpu_seconds();
    const auto step_start = comm::Clock::now();
    // Preset auto: every group settles its routes for this step (part of
    // the step's time, so that auto's own cost shows in tokens_per_s).
    std::vector<comm::AutoDecision> decisions;
    if (adaptive) decisions = model.adapt(step, s.previous_loss);
    const double adapt_ms = comm::seconds_since(step_start) * 1e3;
    if (is_root && print_every > 0)
      for (const auto& d : decisions)
        if (worth_a_line(d)) std::printf("%s\n", auto_change_line(step + 1, d).c_str());
    if (is_root && !decisions.empty()) std::fflush(stdout);
    // Dumped tensors are the last step's own, before the dp reduction.
    const bool dump = step + 1 == t.steps && !s.options.dump_tensors_dir.empty();
    const models::Outcome outcome = model.train_step(step, s.schedule.at(step), t.grad_clip,
                                                     dump ? s.options.dump_tensors_dir : "");
    timing.seconds = comm::seconds_since(step_start);
    const double cpu_end = process_cpu_seconds();
    if (cpu_start >= 0 && cpu_end >= 0) timing.cpu_ms = (cpu_end - cpu_start) * 1e3;
    timing.after = comm_totals(s.groups, model.extra_groups());
    const StepVerdict verdict = s.guard->check(step + 1, model.last_grad_norm(), model.health());

    StepRecord r = s.record_step(step, outcome, timing, verdict, result);
    s.previous_loss = outcome.loss;
    const auto evaluation_start = comm::Clock::now();
    s.evaluate_if_due(step, verdict, r, result);
    const double evaluation_seconds = r.has_val_loss ? comm::seconds_since(evaluation_start) : 0;
    s.time_step(r, timing.seconds, comm::seconds_since(previous_end), evaluation_seconds);
    previous_end = comm::Clock::now();
    if (is_root && (!metrics_path.empty() || print_every > 0 || !tensorboard_dir.empty())) {
      r.groups_json = groups_json(s.groups, model.extra_groups());
      r.group_traffic = group_traffic(s.groups, model.extra_groups());
      r.memory_json = s.memory_json();
      if (adaptive) r.auto_json = auto_decisions_json(decisions, adapt_ms);
      log.record(r);
    }
    if (stage_traffic.active())
      stage_traffic.record(step + 1, groups_json(s.groups, model.extra_groups()));
    s.act_on(verdict, is_root);
    s.steps_done = step + 1;
    s.checkpoints->poll();
    if (s.checkpoints->due(s.steps_done)) {
      s.save_checkpoint(result.skipped_steps);
      attempts.progress(s.steps_done, comm::seconds_since(run_start));
    }
  }
  if (s.options.watchdog) s.options.watchdog->training_ended();
  s.checkpoints->finish();
  result.seconds = comm::seconds_since(run_start);
  attempts.progress(s.steps_done, result.seconds);
  attempts.close();
  const AttemptLog::Totals all_attempts = attempts.totals(result.seconds);
  result.history.attempts = all_attempts.attempts;
  result.history.seconds = all_attempts.seconds;
  result.history.wall_seconds = all_attempts.wall_seconds;
  const Utilization u = s.flops.over(double(t.steps - first_step), result.seconds);
  result.utilization.flops_per_token = s.flops.per_token().forward;
  result.utilization.tflops_per_rank = u.tflops_per_rank;
  result.utilization.mfu = u.mfu;
  result.utilization.hfu = u.hfu;
  result.utilization.peak_flops = s.flops.peak();
  result.utilization.peak_source = s.options.peak_source;
  result.peak_gathered_parameter_bytes = model.optimizer().peak_gathered_parameter_bytes();
  result.peak_state_bytes = model.optimizer().peak_bytes();
  const DeviceMemoryPeak device_peak = device_memory_peak(s.options.cuda_device);
  result.peak_device_allocated_bytes = device_peak.allocated_bytes;
  result.peak_device_reserved_bytes = device_peak.reserved_bytes;
  log.close();
  if (!s.options.dump_tensors_dir.empty()) model.dump_parameters(s.options.dump_tensors_dir);
  if (is_root && !s.options.run_dir.empty()) {
    if (!s.options.resolved_config.empty()) result.run_files.push_back("config.yaml");
    if (!metrics_path.empty()) result.run_files.push_back("metrics.jsonl");
    if (!tensorboard_dir.empty())
      result.run_files.push_back("tensorboard/" +
                                 log.tensorboard_path().substr(tensorboard_dir.size() + 1));
    result.run_files.push_back("attempts.jsonl");
  }
  const auto totals = comm_totals(s.groups, model.extra_groups());
  result.wire_bytes = totals.wire_bytes;
  result.raw_bytes = totals.raw_bytes;
  const double samples = double(t.global_batch * (t.steps - first_step));
  if (tokens_per_sample > 0)
    result.tokens_per_second = samples * double(tokens_per_sample) / result.seconds;
  else
    result.images_per_second = samples / result.seconds;
  return result;
}

std::string Trainer::save_checkpoint() {
  if (impl_->options.watchdog) impl_->options.watchdog->training_ended();
  const std::string path = impl_->checkpoints->save(
      impl_->steps_done, impl_->skipped_before + impl_->guard->skipped_steps());
  impl_->checkpoints->finish();
  return path;
}

}  // namespace cmpi::trainer
