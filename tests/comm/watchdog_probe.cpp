// watchdog_probe SCENARIO TIMEOUT_S: a job under the watchdog (comm/watchdog.h)
// whose ranks misbehave as SCENARIO says; watchdog_probe_test.sh runs it
// under mpirun and checks how the job ends.
//   mismatch  rank 0 enters an allreduce on group tp while the others enter
//             one on group dp: mismatched collectives, which never match.
//   device_mismatch  the same with device buffers (a FakeDevice attached to
//             both groups): the device calls are watched like the host ones.
//   loop      every rank runs allreduces on group dp for ever; the test makes
//             one rank stop calling (CMPI_TEST_FAULT=spin:R:N, or SIGSTOP).
//   healthy   every rank computes (sleeps) for longer than the timeout
//             between quick allreduces: time outside a call never counts,
//             so the job must finish with exit code 0.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.h"
#include "comm/mpi_session.h"
#include "comm/termination_signals.h"
#include "compress/cuda/fake_device.h"

namespace {

using cmpi::comm::Communicator;
using cmpi::comm::GroupKind;
using cmpi::comm::Role;

std::unique_ptr<Communicator> group_over_world(GroupKind kind) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  return std::make_unique<Communicator>(comm, kind);
}

}  // namespace

int main(int argc, char** argv) {
  cmpi::comm::MpiSession session(&argc, &argv, "cmpi-probe");
  cmpi::comm::report_termination_signals("cmpi-probe", session.world_rank(), session.world_size());
  if (argc != 3)
    session.abort_job("usage: watchdog_probe mismatch|device_mismatch|loop|healthy TIMEOUT_S", 2);
  const std::string scenario = argv[1];
  const double timeout = std::atof(argv[2]);
  session.watchdog().set_timeout(timeout);
  auto dp = group_over_world(GroupKind::kDp);
  auto tp = group_over_world(GroupKind::kTp);
  std::vector<float> data(1024, 1.0f);

  if (scenario == "mismatch") {
    Communicator& mine = session.world_rank() == 0 ? *tp : *dp;
    mine.allreduce(data.data(), data.size(), Role::kGradient);
  } else if (scenario == "device_mismatch") {
    // Leaked on purpose: the job ends inside the call.
    auto* device = new cmpi::compress::cuda::FakeDevice(uint64_t(session.world_rank()));
    const auto stream = device->create_stream();
    dp->attach_device(*device, stream);
    tp->attach_device(*device, stream);
    cmpi::compress::cuda::DeviceBuffer buffer(*device, data.size() * sizeof(float));
    Communicator& mine = session.world_rank() == 0 ? *tp : *dp;
    mine.allreduce(cmpi::comm::MemoryKind::kDevice, buffer.as<float>(), data.size(),
                   Role::kGradient);
  } else if (scenario == "loop") {
    for (int64_t step = 0;; ++step) {
      session.watchdog().note_step(step);
      dp->allreduce(data.data(), data.size(), Role::kGradient);
      // Every rank is past start-up once the first allreduce is done: the
      // test stops a rank only then (start-up under a sanitizer is slow).
      if (step == 0 && session.world_rank() == 0) {
        std::printf("probe looping\n");
        std::fflush(stdout);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  } else if (scenario == "healthy") {
    for (int call = 0; call < 2; ++call) {
      std::this_thread::sleep_for(std::chrono::duration<double>(timeout * 1.5));
      dp->allreduce(data.data(), data.size(), Role::kGradient);
    }
  } else {
    session.abort_job("unknown scenario " + scenario, 2);
  }
  if (session.world_rank() == 0) std::printf("probe finished\n");
  return 0;
}
