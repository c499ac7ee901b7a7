// Lossless reference points for the codec benchmark, timed on the same data
// as the codecs: memcpy (the speed ceiling), zstd, LZ4, and Blosc (LZ4 or
// zstd behind a byte- or bit-shuffle filter with typesize 4, i.e. the bytes
// or bits of the floats regrouped by position before compression).
//
// zstd, LZ4 and memcpy work on independent 1 MiB chunks, as the project's
// codecs do, so the all-threads run spreads chunks over OpenMP threads and
// the ratio is the same in both runs. Blosc cuts blocks itself and runs them
// on its own threads (blosc_compress_ctx / blosc_decompress_ctx).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bench/bench_subject.h"

namespace cmpi::bench {

// Reference families, in the order they run: memcpy, zstd, lz4, blosc.
std::vector<std::string> lossless_reference_families();

// The settings of the given families (all of them if `families` is empty).
// Throws std::invalid_argument naming an unknown family.
std::vector<std::unique_ptr<BenchSubject>> make_lossless_references(
    const std::vector<std::string>& families, int max_threads);

// Library versions, for the benchmark's header: "zstd 1.5.4, lz4 1.9.4, blosc 1.21.3".
std::string lossless_library_versions();

}  // namespace cmpi::bench
