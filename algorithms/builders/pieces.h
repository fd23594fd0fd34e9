// Pieces: a collective cut into consecutive parts that run one after another over the same
// peers, as NCCL's loops do. A ring all-reduce over the whole buffer forwards each chunk it
// reduced only after the whole previous chunk went out, so on a large buffer the reduced chunk
// has left the caches and is read back from memory; in pieces of a few MiB it is forwarded
// while still in cache. The executor runs whatever is ready, so piece k + 1's first sends
// start as soon as piece k's last ones on the same connection have gone.
#pragma once

#include <algorithm>
#include <cstddef>

#include "algorithms/schedule.h"

namespace weft {

// Cuts `count` elements into consecutive pieces of `pieceElements` (the last may be shorter; 0
// or a count that fits one piece: a single piece), builds each with buildPart(elements) over
// its own span addressed from 0, and appends the parts in order, moving each to its span and
// laying their scratch end to end. Every part must have the same divisor.
template <typename BuildPart>
Schedule buildInPieces(size_t count, size_t pieceElements, size_t elementSize, BuildPart buildPart) {
  if (pieceElements == 0 || count <= pieceElements) return buildPart(count);
  Schedule whole;
  for (size_t first = 0; first < count; first += pieceElements) {
    Schedule part = buildPart(std::min(pieceElements, count - first));
    for (Step& step : part.steps) {
      shiftRanges(&step, first * elementSize, whole.scratchBytes);
      whole.steps.push_back(step);
    }
    whole.scratchBytes += part.scratchBytes;
    whole.divisor = part.divisor;
  }
  return whole;
}

}  // namespace weft
