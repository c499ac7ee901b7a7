// MpiSession: MPI_Init on construction, MPI_Finalize on destruction, the
// process's Watchdog (every blocking communication call under a deadline,
// comm/watchdog.h), and the one way a rank ends a job on error (abort_job),
// so that a failure on one rank never leaves the others waiting inside a
// collective.
#pragma once

#include <memory>
#include <string>

#include "comm/watchdog.h"

namespace cmpi::comm {

class MpiSession {
 public:
  // `program` starts the lines the session prints ("cmpi-train: rank 1/4: ...").
  MpiSession(int* argc, char*** argv, const std::string& program = "cmpi");
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int world_rank() const { return rank_; }
  int world_size() const { return size_; }
  Watchdog& watchdog() { return *watchdog_; }

  // Prints "<program>: rank R/N: error: message", tells the other ranks that
  // the job is failing (they then end quietly) and aborts every rank with
  // exit code `code`.
  [[noreturn]] void abort_job(const std::string& message, int code = 1);

 private:
  int rank_ = 0;
  int size_ = 1;
  std::unique_ptr<Watchdog> watchdog_;
};

// Prints "<program>: rank R/N: error: message" to stderr and aborts every rank of
// MPI_COMM_WORLD with exit code `code`. Safe to call before MPI_Init. (For
// code without a session; MpiSession::abort_job also quiets the other ranks.)
[[noreturn]] void abort_job(const std::string& program, const std::string& message, int code = 1);

}  // namespace cmpi::comm
