// The codec settings the decode fuzz target tries: every codec of the
// registry (CodecRegistry::with_builtin_codecs), with the settings that
// change its body format (zfp's modes and implementations, fp8's formats,
// mpc's dimensions and chunking, the sparsifiers' block and bucket sizes).
// Shared by the target and the seed writer, so seeds name settings by index.
#pragma once

#include <string>
#include <vector>

namespace cmpi::fuzz {

inline const std::vector<std::string>& codec_fuzz_specs() {
  static const std::vector<std::string> specs = {
      "identity",
      "zfp:mode=rate,rate=16,threads=1",
      "zfp:mode=rate,rate=5.5,impl=libzfp,threads=1,chunk=256",
      "zfp:mode=accuracy,tolerance=0.001,threads=1,chunk=256",
      "zfp:mode=precision,precision=12,threads=1",
      "zfp:mode=reversible,threads=1",
      "fp16",
      "bf16",
      "fp8:format=e4m3,block=32",
      "fp8:format=e5m2",
      "mpc",
      "mpc:dim=auto,chunk=64",
      "mpc:dim=3,chunk=96",
      "topk:ratio=0.1",
      "randomk:ratio=0.25",
      "threshold:threshold=0.5",
      "sidco:density=0.1",
      "block_sparse:block=16",
      "block_sparse:block=8,select=always",
      "qsgd:levels=4,bucket=64",
      "qsgd:levels=127,norm=max",
      "natural",
      "sign:bucket=32",
  };
  return specs;
}

}  // namespace cmpi::fuzz
