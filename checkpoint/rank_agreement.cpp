#include "checkpoint/rank_agreement.h"

#include <climits>
#include <exception>
#include <string>

#include "checkpoint/checkpoint_error.h"

namespace cmpi::checkpoint {

void agree_or_throw(MPI_Comm comm, const std::function<void()>& work) {
  std::string error;
  try {
    work();
  } catch (const std::exception& e) {
    error = e.what();
    if (error.empty()) error = "unknown error";
  }
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int mine = error.empty() ? INT_MAX : rank, first = INT_MAX;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == INT_MAX) return;
  int length = int(error.size());
  MPI_Bcast(&length, 1, MPI_INT, first, comm);
  error.resize(size_t(length));
  MPI_Bcast(error.data(), length, MPI_CHAR, first, comm);
  throw CheckpointError(error);
}

}  // namespace cmpi::checkpoint
