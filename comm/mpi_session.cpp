#include "comm/mpi_session.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>

namespace cmpi::comm {

MpiSession::MpiSession(int* argc, char*** argv) {
  // MULTIPLE: the data-parallel optimizer reduces gradients on its own thread
  // while the main thread talks over tp/pp. An MPI that grants less still
  // runs everything else; the optimizer refuses overlap then, naming the key.
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
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
