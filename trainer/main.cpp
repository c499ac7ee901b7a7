// cmpi-train: rank 0 reads the config and every rank resolves the same text
// (job_config.h); the ranks agree that it is valid (so a bad config ends the
// job once, cleanly, with exit code 2), then trains. Any error after that
// aborts every rank with the message (exit 1), so no rank is left waiting
// inside MPI; a stop all ranks agreed on (TrainingStopped: non-finite values)
// ends them all with exit 1 and one message, without MPI_Abort. Every
// communication call runs under the session's watchdog (run.timeout), and a
// job that fails says so in one line: ranks that know the job is failing
// end quietly when mpirun terminates them (comm::expect_termination).
#include <mpi.h>

#include <climits>
#include <cstdio>
#include <string>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/checkpoint_store.h"
#include "checkpoint/loaded_checkpoint.h"
#include "checkpoint/metadata.h"
#include "checkpoint/optimizer_state.h"
#include "checkpoint/rank_agreement.h"
#include "checkpoint/safetensors_writer.h"
#include "comm/mpi_session.h"
#include "comm/node_grouping.h"
#include "comm/termination_signals.h"
#include "config/config_loader.h"
#include "config/run_paths.h"
#include "data/token_source.h"
#include "hf/hf_export.h"
#include "hf/hf_pretrained.h"
#include "launch/checked_config.h"
#include "launch/config_warnings.h"
#include "launch/job_config.h"
#include "launch/memory_preflight.h"
#include "models/family/model_family.h"
#include "parallel/mesh/process_groups.h"
#include "plan/peak_flops.h"
#include "trainer/allocator_settings.h"
#include "trainer/blas_probe.h"
#include "trainer/cli_args.h"
#include "trainer/device_choice.h"
#include "trainer/device_gemm.h"
#include "trainer/device_memory.h"
#include "trainer/injected_kill.h"
#include "trainer/plan_command.h"
#include "trainer/run_summary.h"
#include "trainer/stage_traffic_log.h"
#include "trainer/trainer.h"
#include "trainer/version_info.h"

namespace {

constexpr const char* kProgram = "cmpi-train";

// True on every rank if no rank failed. The lowest failing rank prints its
// message (config errors are the same everywhere; printing once is enough),
// and every rank then ends with exit code 2, quietly if mpirun terminates
// it first (the first rank to exit nonzero makes mpirun end the others).
bool all_ranks_ok(const std::string& error, int rank) {
  int my_rank_if_failed = error.empty() ? INT_MAX : rank;
  int first_failed = INT_MAX;
  MPI_Allreduce(&my_rank_if_failed, &first_failed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first_failed == INT_MAX) return true;
  cmpi::comm::expect_termination(2);
  if (first_failed == rank) {
    std::fprintf(stderr, "%s: %s\n", kProgram, error.c_str());
    std::fflush(stderr);
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cmpi;
  // Before MPI starts: --version must answer without an MPI job (a login
  // node, a bug report).
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--version") {
      std::fputs(trainer::version_text().c_str(), stdout);
      return 0;
    }
  // Before anything allocates: step-to-step tensors reuse freed memory.
  const std::string allocator_note = trainer::keep_freed_memory_for_reuse();
  comm::MpiSession mpi(&argc, &argv, kProgram);
  const int rank = mpi.world_rank();
  comm::report_termination_signals(kProgram, rank, mpi.world_size());

  trainer::CliArgs args;
  config::Config config;
  parallel::ParallelDims dims;
  trainer::InjectedKill injected_kill;  // tests only: CMPI_TEST_KILL_AT_STEP
  std::string error;
  try {
    args = trainer::CliArgs::parse(argc, argv);
  } catch (const trainer::UsageError& e) {
    error = std::string(e.what()) + "\n" + trainer::CliArgs::usage();
  }
  // Agree on the arguments before the config load, which is collective.
  if (!all_ranks_ok(error, rank)) return 2;
  int any_help = args.help ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &any_help, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  args.help = any_help != 0;
  if (!args.help) {
    try {
      config = launch::load_job_config(args.config_paths, args.overrides, MPI_COMM_WORLD);
      const int world =
          args.plan.enabled ? trainer::plan_world_size(args.plan, config) : mpi.world_size();
      // Exporting reads files only: the job's layout does not matter.
      if (!args.exports()) dims = launch::validate_layout(config, world);
      // Pretrained weights are part of the config: their config.json and
      // tensor shapes are checked here, before anything is allocated (a
      // resumed run takes its checkpoint's weights instead).
      if (!config.model.init_from.empty() && !args.resume && !args.exports() &&
          !args.plan.enabled && rank == 0)
        try {
          hf::HfPretrained::open(config.model.init_from, config.model);
        } catch (const std::exception& e) {
          throw std::runtime_error(std::string("model.init_from: ") + e.what());
        }
      injected_kill = trainer::injected_kill_from_environment();
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (!all_ranks_ok(error, rank)) return 2;
  if (config.run.timeout == config::RunConfig::kAutoTimeout)
    mpi.watchdog().use_auto_timeout(config.run.timeout_floor);
  else
    mpi.watchdog().set_timeout(config.run.timeout);
  if (args.help) {
    if (rank == 0) std::fputs(trainer::CliArgs::usage(), stdout);
    return 0;
  }
  if (args.print_config) {
    if (rank == 0)
      std::fputs((config::to_yaml(config) + config::describe_sources(config)).c_str(), stdout);
    return 0;
  }
  // How the files were read (a GPT-NeoX config through its key table).
  if (rank == 0 && config.log.every > 0) {
    for (const std::string& note : config.notes) std::printf("config: %s\n", note.c_str());
    std::fflush(stdout);
  }
  // Which checkpoint --resume means, agreed before anything is allocated,
  // and how far it got.
  std::string resume_path;
  int64_t resumed_step = 0;
  if (args.resume) {
    try {
      checkpoint::agree_or_throw(MPI_COMM_WORLD, [&] {
        const std::string root = config::checkpoint_root(config);
        resume_path = args.resume_auto ? checkpoint::latest_checkpoint_if_any(root)
                                       : checkpoint::resolve_resume_path(root, args.resume_path);
        if (!resume_path.empty())
          resumed_step =
              checkpoint::read_metadata(resume_path + "/" + checkpoint::kMetadataFile).step;
        if (args.resume_auto && resume_path.empty() && rank == 0 && config.log.every > 0) {
          std::printf(
              "checkpoint: --resume auto: no complete checkpoint under %s, starting at "
              "step 0\n",
              root.c_str());
          std::fflush(stdout);
        }
      });
    } catch (const checkpoint::CheckpointError& e) {
      comm::expect_termination(2);
      if (rank == 0) std::fprintf(stderr, "%s: %s\n", kProgram, e.what());
      return 2;
    }
  }
  if (args.exports()) {
    try {
      checkpoint::agree_or_throw(MPI_COMM_WORLD, [&] {
        if (rank != 0) return;
        const auto loaded = checkpoint::LoadedCheckpoint::read(resume_path, nullptr);
        if (!args.export_path.empty()) {
          const size_t bytes = checkpoint::write_safetensors(loaded, args.export_path);
          std::printf("exported %s (step %lld, %zu tensors) to %s (%zu bytes)\n",
                      resume_path.c_str(), (long long)loaded.metadata().step, loaded.names().size(),
                      args.export_path.c_str(), bytes);
        }
        if (!args.export_hf_dir.empty()) {
          const auto hf = hf::export_hf(loaded, config, args.export_hf_dir);
          std::printf(
              "exported %s (step %lld) as a Hugging Face %s model to %s: config.json, "
              "generation_config.json (%s), model.safetensors (%zu tensors, %zu bytes)%s\n",
              resume_path.c_str(), (long long)loaded.metadata().step,
              hf::architecture_name(hf.architecture).c_str(), args.export_hf_dir.c_str(),
              hf.eos_token_id < 0 ? "no token ids: data.tokenizer names none"
                                  : ("eos id " + std::to_string(hf.eos_token_id)).c_str(),
              hf.tensors, hf.weight_bytes,
              hf.tokenizer_from.empty()
                  ? "; no tokenizer.json (data.tokenizer names none)"
                  : (", tokenizer.json (from " + hf.tokenizer_from + ")").c_str());
        }
      });
    } catch (const checkpoint::CheckpointError& e) {
      comm::expect_termination(2);
      if (rank == 0) std::fprintf(stderr, "%s: %s\n", kProgram, e.what());
      return 2;
    }
    return 0;
  }
  // A finished run resumed (a requeued job that already completed): nothing
  // to train, and its summary and metrics stay as they are. (--dump-tensors
  // resumes to run one forward of the model, not to train: it goes on.)
  if (!resume_path.empty() && resumed_step >= config.training.steps && !args.plan.enabled &&
      args.dump_tensors_dir.empty()) {
    if (rank == 0)
      std::printf(
          "%s: run %s already finished: checkpoint %s is at step %lld of training.steps %lld; "
          "nothing to train (raise training.steps to train on), its files are left as they "
          "are\n",
          kProgram, config::run_directory(config).c_str(), resume_path.c_str(),
          (long long)resumed_step, (long long)config.training.steps);
    return 0;
  }
  if (args.plan.enabled) {
    if (rank != 0) return 0;
    if (!models::family_of(config.model).estimate_stage_memory) {
      std::fprintf(stderr, "%s: --plan models GPTs only; model.kind is %s\n", kProgram,
                   config::name_of(config.model.kind));
      return 2;
    }
    try {
      return trainer::run_plan(args.plan, config, dims);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", kProgram, e.what());
      return 2;
    }
  }
  // Which ranks share a node, agreed before anything groups ranks by node.
  const comm::NodeGrouping nodes = comm::agree_node_grouping(MPI_COMM_WORLD);
  if (rank == 0 && !nodes.disagreement.empty())
    std::fprintf(stderr, "%s: warning: %s\n", kProgram, nodes.disagreement.c_str());
  // run.device: each rank's device, agreed before anything is allocated (a
  // rank without the GPU it was asked for ends the job naming itself).
  torch::Device device(torch::kCPU);
  trainer::DeviceContext device_context;
  try {
    device_context =
        trainer::probe_device_context(nodes, rank, config.run.device != config::RunDevice::kCpu);
    device = trainer::choose_device(config.run.device, device_context);
    if (device.is_cuda()) error = trainer::device_layout_refusal(config);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!all_ranks_ok(error, rank)) return 2;
  try {
    // The families with a memory estimate (the GPT) are held against the
    // node's memory, or on a GPU against the GPU's free memory shared by its
    // ranks; the others (a ResNet) are not checked.
    if (models::family_of(config.model).estimate_stage_memory)
      error = device.is_cuda() ? launch::memory_fit_error(
                                     config, dims, trainer::ranks_sharing(device, device_context),
                                     trainer::device_free_bytes(device.index()),
                                     "GPU " + device.str() + " (its free memory)")
                               : launch::check_memory_fits(config, dims, MPI_COMM_WORLD);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!all_ranks_ok(error, rank)) return 2;
  // The data is part of the config: a missing file, tokens outside the
  // vocabulary or a split too small ends the job here, before training.
  std::shared_ptr<const data::TokenSource> tokens;
  try {
    if (models::family_of(config.model).reads_tokens)
      tokens = data::open_token_source(config.data, data::token_demand(config), MPI_COMM_WORLD,
                                       config.log.every > 0 ? stdout : nullptr);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!all_ranks_ok(error, rank)) return 2;
  if (rank == 0 && config.log.every > 0 && config.run.device != config::RunDevice::kCpu) {
    std::printf("%s\n", trainer::describe_device(device, device_context).c_str());
    std::fflush(stdout);
  }
  if (rank == 0)
    for (const std::string& warning : launch::config_warnings(config))
      std::fprintf(stderr, "%s: warning: %s\n", kProgram, warning.c_str());

  try {
    // Rank 0 reports which BLAS LibTorch runs on, and warns loudly on the
    // reference one (it would make compute ~10x slower than it should be).
    // It also measures the GEMM rate of the run's precision: the peak MFU
    // divides by unless run.peak_flops names a device or a number.
    trainer::TrainerOptions options;
    if (rank == 0) {
      const auto blas =
          trainer::probe_blas(int(config.training.threads), config.training.precision);
      const auto peak = plan::resolve_peak_flops(config.run.peak_flops, config.training.precision);
      options.peak_flops = peak.flops_per_second;
      options.peak_source = peak.source;
      if (peak.flops_per_second <= 0 && device.is_cuda()) {
        // A GPU run: the GPU's GEMM, not the host's.
        options.peak_flops = trainer::device_gemm_flops(device, config.training.precision);
        options.peak_source = std::string("measured ") +
                              config::name_of(config.training.precision) + " GEMM on " +
                              device.str();
      } else if (peak.flops_per_second <= 0) {
        options.peak_flops = blas.run_precision_gflops() * 1e9;
        options.peak_source =
            std::string("measured ") + config::name_of(config.training.precision) + " GEMM, " +
            std::to_string(blas.threads) + " thread" + (blas.threads == 1 ? "" : "s");
      }
      if (config.log.every > 0) std::printf("%s\n", trainer::describe(blas).c_str());
      if (config.log.every > 0 && !allocator_note.empty())
        std::printf("%s\n", allocator_note.c_str());
      std::fflush(stdout);
      std::fputs(trainer::reference_blas_warning(blas).c_str(), stderr);
    }
    parallel::ProcessGroups groups(MPI_COMM_WORLD, dims, config.compression);
    options.run_dir = config::run_directory(config);
    options.resolved_config = config::to_yaml(config);
    options.dump_tensors_dir = args.dump_tensors_dir;
    options.source = tokens;
    options.cuda_device = device.is_cuda() ? int(device.index()) : -1;
    options.resume_path = resume_path;
    options.resume_requested = args.resume;
    options.watchdog = &mpi.watchdog();
    options.kill_rank = injected_kill.rank;
    options.kill_step = injected_kill.step;
    options.stage_traffic_dir = trainer::StageTrafficLog::directory_from_environment();
    trainer::Trainer trainer(config, groups, options);
    const auto result = trainer.run();
    trainer::report_summary(config, groups, result, options.run_dir);
  } catch (const checkpoint::CheckpointError& e) {
    // Thrown on every rank alike (rank_agreement.h): one message, exit 2.
    comm::expect_termination(2);
    if (rank == 0) {
      std::fprintf(stderr, "%s: checkpoint: %s\n", kProgram, e.what());
      std::fflush(stderr);
    }
    return 2;
  } catch (const trainer::TrainingStopped& e) {
    // Every rank stopped at the same step, outside any collective: one
    // message, and every rank exits 1 through a normal MPI_Finalize.
    comm::expect_termination(1);
    if (e.reporter()) {
      std::fprintf(stderr, "%s: rank %d/%d: error: %s\n", kProgram, rank, mpi.world_size(),
                   e.what());
      std::fflush(stderr);
    }
    return 1;
  } catch (const std::exception& e) {
    mpi.abort_job(e.what());
  }
  return 0;
}
