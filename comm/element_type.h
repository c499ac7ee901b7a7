// ElementType and BufferKind: what a Communicator call's buffers hold and
// where they live, as data of the call rather than an overload family (as
// gloo's AllreduceOptions carry the element size and the reduce function).
// One dispatch then serves every type: the policy is asked about the real
// bytes and the word type, stats count bytes() per element, and the plain
// MPI path moves mpi_type() and sums with ElementSum. Where the buffers live
// picks the group's transport (host MPI, or the attached device's).
#pragma once

#include <mpi.h>

#include <cstddef>

#include "comm/memory_kind.h"
#include "compress/word_type.h"

namespace cmpi::comm {

struct ElementType {
  compress::WordType word = compress::WordType::kFloat32;

  size_t bytes() const { return compress::word_bytes(word); }
  bool is_float32() const { return word == compress::WordType::kFloat32; }
  // What the plain path hands MPI: floats, or the 16-bit patterns as they are.
  MPI_Datatype mpi_type() const { return is_float32() ? MPI_FLOAT : MPI_UINT16_T; }
  // What a count of these elements is called in errors.
  const char* noun() const { return is_float32() ? "floats" : "16-bit words"; }
};

struct BufferKind {
  ElementType element;
  MemoryKind memory = MemoryKind::kHost;
};

// The plain path's sum of one element type as an MPI operation, for one
// call: MPI_SUM on floats; on 16-bit words an operation that widens both
// operands to float, adds and rounds to nearest-even once per reduction
// step, as NCCL reduces 16-bit buffers. That one is declared
// non-commutative, so MPI combines the ranks' buffers in rank order and
// every rank gets the same bits.
class ElementSum {
 public:
  explicit ElementSum(ElementType element);
  ~ElementSum();
  ElementSum(const ElementSum&) = delete;
  ElementSum& operator=(const ElementSum&) = delete;
  MPI_Op op() const { return op_; }

 private:
  MPI_Op op_ = MPI_SUM;
  bool created_ = false;
};

}  // namespace cmpi::comm
