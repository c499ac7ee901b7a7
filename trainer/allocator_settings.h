// How the process's C allocator keeps memory between training steps.
//
// LibTorch's CPU allocator takes every tensor from malloc and gives it back
// when the tensor dies, so each step allocates and frees the same activation
// and gradient tensors (hundreds of KiB to tens of MiB) again. With glibc's
// defaults the large ones are mmap'ed and unmapped per use, or the heap top
// is trimmed after a free, and each new use touches fresh pages: on the
// benchmark GPT ~12,700 page faults per step (about 50 MiB zeroed by the
// kernel per step), against ~300 with the settings below. Keeping freed
// memory in the heap for reuse costs no extra peak: the heap holds what the
// step's peak needed anyway. Settings only; no arithmetic changes.
#pragma once

#include <string>

namespace cmpi::trainer {

// Sets glibc's mmap threshold to 64 MiB (tensors below it come from the heap
// and are reused) and its trim threshold to 512 MiB (freed heap memory stays
// for the next step). Leaves the allocator alone when the environment already
// configures it (GLIBC_TUNABLES with a glibc.malloc key, or
// MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_), so a user's choice wins.
// Returns what it did, for the start-up log ("" when it changed nothing).
std::string keep_freed_memory_for_reuse();

}  // namespace cmpi::trainer
