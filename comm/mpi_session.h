// MpiSession: MPI_Init on construction, MPI_Finalize on destruction, and the
// one way a rank ends a job on error (abort_job), so that a failure on one
// rank never leaves the others waiting inside a collective.
#pragma once

#include <string>

namespace cmpi::comm {

class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int world_rank() const { return rank_; }
  int world_size() const { return size_; }

 private:
  int rank_ = 0;
  int size_ = 1;
};

// Prints "<program>: rank R/N: message" to stderr and aborts every rank of
// MPI_COMM_WORLD with exit code `code`. Safe to call before MPI_Init.
[[noreturn]] void abort_job(const std::string& program, const std::string& message, int code = 1);

}  // namespace cmpi::comm
