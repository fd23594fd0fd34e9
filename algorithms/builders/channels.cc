#include "algorithms/builders/channels.h"

#include <algorithm>

namespace weft {

std::vector<int> channelRing(const std::vector<std::vector<int>>& nodes, const std::vector<int>& order, int channel) {
  if (nodes.empty() || channel == 0) return order;
  int maxRank = 0;
  for (int r : order) maxRank = std::max(maxRank, r);
  std::vector<int> nodeOf(static_cast<size_t>(maxRank) + 1, -1);
  for (size_t k = 0; k < nodes.size(); ++k)
    for (int r : nodes[k])
      if (r >= 0 && r <= maxRank) nodeOf[r] = static_cast<int>(k);
  // Each run of consecutive ring positions on one node is rotated left by `channel`.
  std::vector<int> ring;
  size_t first = 0;
  while (first < order.size()) {
    size_t end = first + 1;
    while (end < order.size() && nodeOf[order[end]] == nodeOf[order[first]]) ++end;
    const size_t shift = static_cast<size_t>(channel) % (end - first);
    ring.insert(ring.end(), order.begin() + static_cast<std::ptrdiff_t>(first + shift),
                order.begin() + static_cast<std::ptrdiff_t>(end));
    ring.insert(ring.end(), order.begin() + static_cast<std::ptrdiff_t>(first),
                order.begin() + static_cast<std::ptrdiff_t>(first + shift));
    first = end;
  }
  return ring;
}

Schedule mergeChannels(std::vector<Schedule> parts, const std::vector<size_t>& begins, size_t elementSize) {
  Schedule merged;
  if (parts.empty()) return merged;
  merged.divisor = parts.front().divisor;
  size_t scratch = 0;
  size_t longest = 0;
  for (size_t c = 0; c < parts.size(); ++c) {
    for (Step& s : parts[c].steps) shiftRanges(&s, begins[c] * elementSize, scratch);
    scratch += parts[c].scratchBytes;
    longest = std::max(longest, parts[c].steps.size());
  }
  merged.scratchBytes = scratch;
  for (size_t i = 0; i < longest; ++i)
    for (const Schedule& part : parts)
      if (i < part.steps.size()) merged.steps.push_back(part.steps[i]);
  return merged;
}

}  // namespace weft
