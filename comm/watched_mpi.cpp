// Blocking MPI calls made outside the Communicator (the trainer's own
// reductions, the start-up agreement, checkpoint agreement, MPI_Finalize)
// run under the watchdog too: this file defines the blocking MPI functions
// the project calls and forwards each to its PMPI_ name (MPI's profiling
// interface) inside a WatchedCall. The program's own definitions take
// precedence over the MPI library's, so no caller changes; without an
// installed watchdog each costs one atomic load.
//
// Intercepted MPI functions receive nothing but their MPI arguments, so the
// watchdog the session owns is reached through `the_watchdog`, the one piece
// of process-wide state here, set while that watchdog lives.
#include <mpi.h>

#include <atomic>

#include "comm/watchdog.h"

namespace cmpi::comm {
namespace {

std::atomic<Watchdog*> the_watchdog{nullptr};

}  // namespace

void set_installed_watchdog(Watchdog* watchdog) {
  the_watchdog.store(watchdog, std::memory_order_release);
}

Watchdog* installed_watchdog() {
  return the_watchdog.load(std::memory_order_acquire);
}

}  // namespace cmpi::comm

using cmpi::comm::WatchedCall;

extern "C" {

// ------------------------------------------------------------ collectives

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm) {
  WatchedCall watched("MPI_Allreduce", comm);
  return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm) {
  WatchedCall watched("MPI_Reduce", comm);
  return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  WatchedCall watched("MPI_Bcast", comm);
  return PMPI_Bcast(buffer, count, datatype, root, comm);
}

int MPI_Barrier(MPI_Comm comm) {
  WatchedCall watched("MPI_Barrier", comm);
  return PMPI_Barrier(comm);
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  WatchedCall watched("MPI_Allgather", comm);
  return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                   MPI_Comm comm) {
  WatchedCall watched("MPI_Allgatherv", comm);
  return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
}

int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  WatchedCall watched("MPI_Gather", comm);
  return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                MPI_Comm comm) {
  WatchedCall watched("MPI_Gatherv", comm);
  return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
                      comm);
}

int MPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  WatchedCall watched("MPI_Scatter", comm);
  return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  WatchedCall watched("MPI_Reduce_scatter", comm);
  return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  WatchedCall watched("MPI_Alltoall", comm);
  return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
                  MPI_Datatype recvtype, MPI_Comm comm) {
  WatchedCall watched("MPI_Alltoallv", comm);
  return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                        recvtype, comm);
}

// ------------------------------------------------------------ point to point

int MPI_Send(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  WatchedCall watched("MPI_Send", comm, dest);
  return PMPI_Send(buf, count, datatype, dest, tag, comm);
}

int MPI_Ssend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  WatchedCall watched("MPI_Ssend", comm, dest);
  return PMPI_Ssend(buf, count, datatype, dest, tag, comm);
}

int MPI_Recv(void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
             MPI_Status* status) {
  WatchedCall watched("MPI_Recv", comm, source);
  return PMPI_Recv(buf, count, datatype, source, tag, comm, status);
}

int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status* status) {
  WatchedCall watched("MPI_Sendrecv", comm, source);
  return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                       source, recvtag, comm, status);
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status* status) {
  WatchedCall watched("MPI_Probe", comm, source);
  return PMPI_Probe(source, tag, comm, status);
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status) {
  WatchedCall watched("MPI_Mprobe", comm, source);
  return PMPI_Mprobe(source, tag, comm, message, status);
}

// A request does not say which communicator it belongs to.
int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  WatchedCall watched("MPI_Wait", MPI_COMM_NULL);
  return PMPI_Wait(request, status);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  WatchedCall watched("MPI_Waitall", MPI_COMM_NULL);
  return PMPI_Waitall(count, requests, statuses);
}

int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  WatchedCall watched("MPI_Waitany", MPI_COMM_NULL);
  return PMPI_Waitany(count, requests, index, status);
}

int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                 MPI_Status statuses[]) {
  WatchedCall watched("MPI_Waitsome", MPI_COMM_NULL);
  return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
}

// ------------------------------------------------------------ communicators

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm) {
  WatchedCall watched("MPI_Comm_dup", comm);
  return PMPI_Comm_dup(comm, newcomm);
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
  WatchedCall watched("MPI_Comm_split", comm);
  return PMPI_Comm_split(comm, color, key, newcomm);
}

int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm* newcomm) {
  WatchedCall watched("MPI_Comm_split_type", comm);
  return PMPI_Comm_split_type(comm, split_type, key, info, newcomm);
}

// MPI_Finalize waits for every rank; a rank stuck elsewhere would hold the
// others here at the very end.
int MPI_Finalize() {
  WatchedCall watched("MPI_Finalize", MPI_COMM_WORLD);
  return PMPI_Finalize();
}

}  // extern "C"
