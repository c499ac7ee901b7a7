// cmpi-train: loads the config on every rank, agrees across ranks that it is
// valid (so a bad config ends the job once, cleanly, with exit code 2), then
// trains. Any error after that aborts every rank with the message (exit 1),
// so no rank is left waiting inside MPI.
#include <mpi.h>

#include <climits>
#include <cstdio>
#include <string>

#include "comm/mpi_session.h"
#include "comm/termination_signals.h"
#include "parallel/process_groups.h"
#include "trainer/blas_probe.h"
#include "trainer/cli_args.h"
#include "trainer/config_loader.h"
#include "trainer/run_summary.h"
#include "trainer/trainer.h"

namespace {

constexpr const char* kProgram = "cmpi-train";

// True on every rank if no rank failed. The lowest failing rank prints its
// message (config errors are the same everywhere; printing once is enough).
bool all_ranks_ok(const std::string& error, int rank) {
  int my_rank_if_failed = error.empty() ? INT_MAX : rank;
  int first_failed = INT_MAX;
  MPI_Allreduce(&my_rank_if_failed, &first_failed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first_failed == INT_MAX) return true;
  if (first_failed == rank) {
    std::fprintf(stderr, "%s: %s\n", kProgram, error.c_str());
    std::fflush(stderr);
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cmpi;
  comm::MpiSession mpi(&argc, &argv);
  const int rank = mpi.world_rank();
  comm::report_termination_signals(kProgram, rank, mpi.world_size());

  trainer::CliArgs args;
  trainer::Config config;
  parallel::ParallelDims dims;
  std::string error;
  try {
    args = trainer::CliArgs::parse(argc, argv);
    if (!args.help) {
      config = trainer::load_config(args.config_path, args.overrides);
      dims = trainer::validate_layout(config, mpi.world_size());
    }
  } catch (const trainer::UsageError& e) {
    error = std::string(e.what()) + "\n" + trainer::CliArgs::usage();
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!all_ranks_ok(error, rank)) return 2;
  if (args.help) {
    if (rank == 0) std::fputs(trainer::CliArgs::usage(), stdout);
    return 0;
  }
  if (args.print_config) {
    if (rank == 0) std::fputs(trainer::to_yaml(config).c_str(), stdout);
    return 0;
  }

  try {
    // Rank 0 reports which BLAS LibTorch runs on, and warns loudly on the
    // reference one (it would make compute ~10x slower than it should be).
    if (rank == 0) {
      const auto blas = trainer::probe_blas(int(config.training.threads));
      if (config.log.every > 0) std::printf("%s\n", trainer::describe(blas).c_str());
      std::fflush(stdout);
      std::fputs(trainer::reference_blas_warning(blas).c_str(), stderr);
    }
    parallel::ProcessGroups groups(MPI_COMM_WORLD, dims, config.compression);
    trainer::TrainerOptions options;
    options.run_dir = config.run.dir + "/" + config.run.name;
    options.resolved_config = trainer::to_yaml(config);
    options.dump_tensors_dir = args.dump_tensors_dir;
    trainer::Trainer trainer(config, groups, options);
    const auto result = trainer.run();
    trainer::report_summary(config, groups, result, options.run_dir);
  } catch (const std::exception& e) {
    comm::abort_job(kProgram, e.what());
  }
  return 0;
}
