// `cmpi-train --version`: the version, the git revision it was configured
// from, and the LibTorch, MPI and CUDA it was built with. Needs no MPI job:
// main prints it before MPI starts.
#pragma once

#include <string>

namespace cmpi::trainer {

// Several lines, the last ending in '\n'.
std::string version_text();

}  // namespace cmpi::trainer
