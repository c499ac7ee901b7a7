// BenchSubject: anything the codec benchmark times the same way, a registry
// codec at one setting or a lossless reference compressor (memcpy, zstd, LZ4,
// Blosc). It encodes n floats into a buffer it owns and decodes that buffer
// back, with a given number of threads.
#pragma once

#include <cstddef>
#include <string>

namespace cmpi::bench {

class BenchSubject {
 public:
  virtual ~BenchSubject() = default;

  // Setting as the tables show it: "zfp:mode=rate,rate=8", "zstd:level=1".
  virtual std::string label() const = 0;
  // The codec or library name the setting belongs to: "zfp", "zstd".
  virtual std::string family() const = 0;
  virtual bool lossless() const = 0;
  // How the all-threads run gets its threads: "param" (the codec's threads
  // parameter), "omp" (the codec has none; it ran with OpenMP's thread count
  // set), "chunks" (the benchmark splits the data), "internal" (the library's
  // own thread option).
  virtual std::string parallelism() const = 0;

  // Encodes in[0..n) with `threads` threads and keeps the result until the
  // next encode; returns its size in bytes.
  virtual size_t encode(const float* in, size_t n, int threads) = 0;
  // Decodes what the last encode() produced into out[0..n).
  virtual void decode(float* out, size_t n, int threads) = 0;
};

}  // namespace cmpi::bench
