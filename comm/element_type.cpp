#include "comm/element_type.h"

#include <cstdint>

namespace cmpi::comm {
namespace {

void sum_bf16(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = compress::bf16_from_float(compress::float_from_bf16(a[i]) +
                                     compress::float_from_bf16(b[i]));
}

void sum_fp16(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = compress::fp16_from_float(compress::float_from_fp16(a[i]) +
                                     compress::float_from_fp16(b[i]));
}

}  // namespace

ElementSum::ElementSum(ElementType element) {
  if (element.is_float32()) return;
  MPI_Op_create(element.word == compress::WordType::kBFloat16 ? &sum_bf16 : &sum_fp16,
                /*commute=*/0, &op_);
  created_ = true;
}

ElementSum::~ElementSum() {
  if (created_) MPI_Op_free(&op_);
}

}  // namespace cmpi::comm
