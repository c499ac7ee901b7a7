// Hugging Face's BPE merge loop, as the `tokenizers` library's BPE model
// runs it: every adjacent pair that is a merge goes into a priority queue
// ordered by (rank, position); the lowest is popped and, if the pair at that
// position still merges into the same token, merged, and the pairs it forms
// with its neighbours are queued; a queued pair whose symbols have changed
// is dropped. The result is that of merging the lowest-ranked, leftmost
// pair one at a time (BytePairEncoder's kLeftmostFirst), found in
// O(merges log length) instead of a scan per merge, so long pieces (a
// whole segment, when no pre-tokenizer splits it) stay cheap.
#pragma once

#include <cstdint>
#include <vector>

#include "data/gpt2_vocabulary.h"

namespace cmpi::data {

// Merges `symbols` (token ids) in place until no adjacent pair is a merge.
void merge_by_queue(const Gpt2Vocabulary& vocabulary, std::vector<int32_t>& symbols);

}  // namespace cmpi::data
