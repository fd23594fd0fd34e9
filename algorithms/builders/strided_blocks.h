// A buffer of nranks blocks (an all-gather's receive, a reduce-scatter's send, both of an
// all-to-all, each in turn; the root's of a gather or scatter) that holds the ranks' blocks
// `strideBytes` apart instead of back to back: one slice (or piece) of a larger call cut for
// pipelined staging or to fit the own device buffers (runtime/exec/staging_slices.h), whose
// blocks are parts of the whole call's blocks. Every builder lays blocks back to back; this
// moves a finished schedule onto the strided buffer without changing a single message, so that
// a rank running the strided form and one running the contiguous form (a staged rank:
// runtime/device/stream_dispatch.cc) still agree on every message.
#pragma once

#include <cstddef>

#include "algorithms/schedule.h"

namespace weft {

// `contiguous`, built for blocks of `blockBytes` back to back in `strided` (BufferKind::Recv of
// an all-gather or gather, Send of a reduce-scatter or scatter, either of an all-to-all), with
// block r moved to offset r * strideBytes. Where every range of that buffer lies inside one
// block (the rings, the hierarchical all-gather, the pairwise all-to-all out of place, the linear
// gather and scatter), the ranges just move. Where one spans blocks (recursive doubling's
// messages of several blocks; recursive halving's and the hierarchical reduce-scatter's copies of
// consecutive ranks' blocks into Scratch; Bruck's rotations into place; the pairwise all-to-all's
// copy of its buffer in place), the schedule runs on a contiguous copy in Scratch instead: the
// blocks it reads before writing are copied in first, those it writes are copied out last.
// Ranges of peers' buffers (the direct schedules') are not moved: they lie inside block `rank` of
// the peer's buffer, and the direct path moves its mapping of a strided peer's buffer instead
// (runtime/exec/direct_path.cc), since a peer may hold its blocks back to back.
Schedule withStridedBlocks(Schedule contiguous, BufferKind strided, size_t blockBytes, size_t strideBytes, int nranks);

}  // namespace weft
