// Symbols stay at their starting index: a merge rewrites the left one and
// unlinks the right one (next/previous links), so a queued position keeps
// naming the same left symbol, and ties between equal ranks go to the
// leftmost, as the library's queue orders them.
#include "data/bpe_merge_queue.h"

#include <queue>

namespace cmpi::data {
namespace {

struct Candidate {
  int32_t rank;
  size_t position;
  int32_t merged_id;
  // std::priority_queue pops the greatest: make that the lowest (rank, position).
  bool operator<(const Candidate& other) const {
    return rank != other.rank ? rank > other.rank : position > other.position;
  }
};

}  // namespace

void merge_by_queue(const Gpt2Vocabulary& vocabulary, std::vector<int32_t>& symbols) {
  const size_t n = symbols.size();
  if (n < 2) return;
  constexpr size_t kNone = SIZE_MAX;
  std::vector<size_t> previous(n), next(n);
  std::vector<bool> alive(n, true);
  std::priority_queue<Candidate> queue;
  for (size_t i = 0; i < n; ++i) {
    previous[i] = i == 0 ? kNone : i - 1;
    next[i] = i + 1 == n ? kNone : i + 1;
    if (i + 1 < n) {
      if (const Gpt2Merge* m = vocabulary.merge(symbols[i], symbols[i + 1])) {
        queue.push({m->rank, i, m->merged_id});
      }
    }
  }
  const auto queue_pair = [&](size_t left) {
    if (left == kNone || next[left] == kNone) return;
    if (const Gpt2Merge* m = vocabulary.merge(symbols[left], symbols[next[left]])) {
      queue.push({m->rank, left, m->merged_id});
    }
  };
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    const size_t left = top.position;
    if (!alive[left] || next[left] == kNone) continue;
    const size_t right = next[left];
    const Gpt2Merge* m = vocabulary.merge(symbols[left], symbols[right]);
    if (!m || m->merged_id != top.merged_id) continue;  // the pair has changed
    symbols[left] = top.merged_id;
    alive[right] = false;
    next[left] = next[right];
    if (next[right] != kNone) previous[next[right]] = left;
    queue_pair(previous[left]);
    queue_pair(left);
  }
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    if (alive[i]) symbols[kept++] = symbols[i];
  }
  symbols.resize(kept);
}

}  // namespace cmpi::data
