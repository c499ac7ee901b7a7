// agree_or_throw: runs a rank-local piece of work (no collectives inside) and
// then makes every rank of `comm` agree on its outcome: if any rank threw,
// the lowest such rank's message is broadcast and every rank throws
// CheckpointError with it. So a corrupt shard seen by one rank stops all of
// them at the same point instead of leaving the others in a collective.
#pragma once

#include <mpi.h>

#include <functional>

namespace cmpi::checkpoint {

void agree_or_throw(MPI_Comm comm, const std::function<void()>& work);

}  // namespace cmpi::checkpoint
