#include "trainer/version_info.h"

#include <mpi.h>

#include "cmpi_build_info.h"

namespace cmpi::trainer {

std::string version_text() {
  // The MPI headers this was compiled against (the library mpirun loads at
  // run time must be the same family: MPI has no stable ABI).
#if defined(OMPI_MAJOR_VERSION)
  const std::string mpi = "Open MPI " + std::to_string(OMPI_MAJOR_VERSION) + "." +
                          std::to_string(OMPI_MINOR_VERSION) + "." +
                          std::to_string(OMPI_RELEASE_VERSION);
#elif defined(MPICH_VERSION)
  const std::string mpi = std::string("MPICH ") + MPICH_VERSION;
#else
  const std::string mpi = "an MPI library";
#endif
  return std::string("cmpi-train ") + CMPI_BUILD_VERSION + "\n" +
         "git revision: " + CMPI_BUILD_GIT_REVISION + "\n" +
         "LibTorch: " + CMPI_BUILD_TORCH_VERSION + "\n" + "MPI: " + mpi + " (MPI standard " +
         std::to_string(MPI_VERSION) + "." + std::to_string(MPI_SUBVERSION) + ")\n" +
         "CUDA: " + CMPI_BUILD_CUDA + "\n";
}

}  // namespace cmpi::trainer
