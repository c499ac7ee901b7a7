// This process's rank and the job's size in MPI_COMM_WORLD, for MPI tests.
#pragma once

#include <mpi.h>

namespace cmpi::testing {

inline int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

inline int world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

}  // namespace cmpi::testing
