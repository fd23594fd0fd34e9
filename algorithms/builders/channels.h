// Channels: a collective split into parts that run side by side, each over its own ring, as
// NCCL's channels do. With node-major rings whose ranks inside every node are rotated by the
// channel number, each channel crosses each node boundary from a different local rank, so a node
// with several NICs (local rank l uses NIC l mod nics) carries the channels on different NICs
// instead of pushing everything through one.
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/builders/split_evenly.h"
#include "algorithms/schedule.h"

namespace weft {

// Channel c's ring: `order` (node-major, the layout's ring order) with every run of consecutive
// positions on one node rotated left by c, so channel 0 is `order` itself. Without nodes,
// `order` (rotating a whole ring gives the same ring).
std::vector<int> channelRing(const std::vector<std::vector<int>>& nodes, const std::vector<int>& order, int channel);

// One schedule from per-channel schedules, channel c covering elements [begins[c], ...) of the
// call: Send and Recv offsets move by begins[c] * elementSize, Scratch ranges are laid end to end,
// and the steps are interleaved round robin so that every channel's first steps come first (the
// executor runs whatever is ready, so the channels proceed together). Every channel must have the
// same divisor.
Schedule mergeChannels(std::vector<Schedule> parts, const std::vector<size_t>& begins, size_t elementSize);

// Cuts `count` elements into `channels` even spans and builds channel c's part with
// buildPart(channelRing(nodes, ring, c), first, elements), then merges the parts. `relative`:
// the parts address their span from 0 (mergeChannels moves them to `first`); otherwise they
// address the call's buffers already. Empty spans are skipped on every rank alike.
template <typename BuildPart>
Schedule buildOnChannels(int channels, size_t count, const std::vector<std::vector<int>>& nodes,
                         const std::vector<int>& ring, size_t elementSize, bool relative, BuildPart buildPart) {
  std::vector<Schedule> parts;
  std::vector<size_t> begins;
  for (int c = 0; c < channels; ++c) {
    const ElementSpan span = splitEvenly(count, channels, c);
    if (span.end == span.begin) continue;
    parts.push_back(buildPart(channelRing(nodes, ring, c), span.begin, span.end - span.begin));
    begins.push_back(relative ? span.begin : 0);
  }
  return mergeChannels(std::move(parts), begins, elementSize);
}

}  // namespace weft
