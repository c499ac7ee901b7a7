// `cmpi-bench sparsify`: how fast sidco (compress/sidco_codec.h) finds and
// encodes the entries of a target density, against exact top-k -- the
// project's topk codec and a plain std::nth_element selection -- and how
// close it comes to the density it was asked for. Runs on synthetic Laplace
// and normal data and on the captured gradients (bench/data/gradients.f32,
// tiled to the size), one thread, subjects interleaved within each repeat so
// that machine load hits all alike; prints the median time per subject,
// the achieved density and the speed-up over both top-k baselines.
#pragma once

namespace cmpi::bench {

// argv[0] is "sparsify". Returns 0 on success, 2 on bad arguments.
int run_sparsify_bench(int argc, char** argv);

}  // namespace cmpi::bench
