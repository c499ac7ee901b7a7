#include "comm/mpi_session.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace cmpi::comm {

MpiSession::MpiSession(int* argc, char*** argv, const std::string& program) {
  // MULTIPLE: the data-parallel optimizer reduces gradients on its own thread
  // while the main thread talks over tp/pp. An MPI that grants less still
  // runs everything else; the optimizer refuses overlap then, naming the key.
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  // A bad CMPI_TEST_FAULT is a broken test, not a job to run without it.
  TestFaults faults;
  try {
    faults = TestFaults::from_environment();
  } catch (const std::exception& e) {
    comm::abort_job(program, e.what(), 2);
  }
  watchdog_ = std::make_unique<Watchdog>(program, rank_, size_, faults);
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  // Someone else finalized MPI: the watchdog's thread can no longer be
  // stopped through it, and the process is about to end anyway.
  if (finalized) {
    (void)watchdog_.release();
    return;
  }
  // The watchdog stays on through MPI_Finalize, which waits for every rank.
  watchdog_->close_channel();
  MPI_Finalize();
  watchdog_.reset();
}

void MpiSession::abort_job(const std::string& message, int code) {
  watchdog_->abort_job(message, code);
}

void abort_job(const std::string& program, const std::string& message, int code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  int rank = 0, size = 1;
  if (initialized && !finalized) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
  std::fprintf(stderr, "%s: rank %d/%d: error: %s\n", program.c_str(), rank, size, message.c_str());
  std::fflush(stderr);
  if (initialized && !finalized && size > 1) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

}  // namespace cmpi::comm
