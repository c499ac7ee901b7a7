// The ring attention's messages on a rank's critical path
// (parallel/context/ring_attention.h), per block and micro-batch: what of
// their time the block's attention does not hide.
//
// Forward runs cp steps. At step s (s < cp - 1) the rank posts the hop of
// the key/value block it holds to the next rank and the receive of the next
// block, attends to the block it holds, then waits: the hop overlaps that
// step's attention and costs the step max(hop, attention). Step 0 attends to
// the rank's own block (its two diagonal pairs under the causal mask and the
// late query chunk's full pair with the early key chunk: 3 pairs of chunks);
// every other step to 2 pairs (the balanced layout of
// parallel/context/context_shard.h: of the 4 pairs of a foreign block
// exactly 2 lie before the query chunk); the last step has no hop. Nothing
// waits for a transfer before step 0's attention starts, so no hop is
// wholly exposed in forward.
// Backward walks the same steps with the key/value hop prefetched the same
// way (hidden behind the step's backward attention, twice its forward, the
// plan's backward = 2 x forward), but each step's key and value gradient
// accumulators are sent only once the step has added to them and are
// waited for at once: their cp hops are not hidden at all.
// A codec's work on a hop (encode at the send, decode in the wait) runs on
// the processor that also computes the attention, so it never hides: a
// hop's exposed time is max(its codec time, hop - attention).
// With full recomputation a recomputed block's forward ring runs again in
// backward. Without any attention to hide behind, the exposed time is the
// blocking time of every message; it never exceeds it.
#pragma once

#include <cstdint>

namespace cmpi::plan {

struct RingHop {
  double seconds = 0;      // one hop as a blocking message takes it (latency, wire, codec)
  double cpu_seconds = 0;  // of it, codec work on the rank's own processor
};

struct RingBlock {
  int cp = 1;
  // One (query chunk, key chunk) pair's forward attention, chunks of
  // seq_len / (2 cp) positions.
  double pair_forward_seconds = 0;
  RingHop keys_values;  // a block's keys and values, one hop
  RingHop gradients;    // its float32 key and value gradient accumulators, one hop
};

// Seconds of one hop the attention of `compute_seconds` does not hide.
double exposed_hop_seconds(const RingHop& hop, double compute_seconds);

// The exposed seconds of one block's ring, forward and backward.
double ring_forward_exposed_seconds(const RingBlock& ring);
double ring_backward_exposed_seconds(const RingBlock& ring);

// Per micro-batch: `blocks` blocks forward and backward, `recomputed` of them
// running their forward ring again in backward.
double ring_exposed_seconds(const RingBlock& ring, int64_t blocks, int64_t recomputed);

}  // namespace cmpi::plan
