// Device calls between hosts are staged through pinned host memory: the caller's stream copies
// the input out of the device, the progress thread runs the collective over the network, the
// stream copies the result back. Done whole, the three follow one another. So every large
// collective but one with a PreMulSum operator (a device scalar is staged with the whole call)
// or a compressed all-reduce (it has slices of its own) is cut into slices that run as calls of
// their own, each a stream batch of its own (runtime/device/stream_dispatch.cc): the stream
// copies every slice out first, the progress thread runs slice k as soon as it is out, and the
// stream copies slice k back as soon as it has run, while later slices cross the network.
//
// Slices are nranks x WEFT_STAGING_SLICE_BYTES (4 MiB a rank by default: each slice is a
// collective of its own, whose start-up grows with the rank count), at most kMostStagingSlices
// of them (a larger call gets larger slices; 8 hide 7/8 of the copies already); a call of less
// than two slices is not cut. Every rank must run the same calls, so the cut depends only on
// what every rank agrees on: the call's shape, the layout (ranks on more than one host, a CUDA
// device on some rank: on GPU nodes, every rank) and the setting; ranks whose buffers are host
// memory run the slices too. A slice of an all-reduce, broadcast or reduce is the same call over
// contiguous elements of the same buffers. A slice of a collective with a block per rank
// (all-gather, reduce-scatter, all-to-all, gather, scatter) takes the same elements of every
// block (WEFT_STAGING_SLICE_BYTES of each), so its blocks lie the whole call's block apart
// (CollectiveCall::blockStride; in both buffers of an all-to-all, the root's of a gather or
// scatter): a staged rank copies them into a contiguous area and runs the contiguous call; a
// rank on host memory runs the schedule moved onto the strided blocks
// (algorithms/builders/strided_blocks.h), with the same messages.
//
// On one host, where every rank has a device, the same collectives are cut for another reason:
// a call the ranks take direct whose larger buffer exceeds the communicator's own device buffers
// (WEFT_OWN_DEVICE_BUFFER_BYTES, runtime/exec/direct_path.h) is cut into pieces that fit, so
// that a rank on memory that cannot be exported goes direct through them piece by piece rather
// than staging the whole call through host memory. Pieces are as many as needed, of equal size
// (but the last; whole 4 KiB where that fits), and strided like slices.
#pragma once

#include <cstddef>
#include <vector>

#include "runtime/exec/collective.h"

namespace weft {

constexpr size_t kMostStagingSlices = 8;

// How many slices (or pieces) `call` is cut into; 1: not cut.
size_t stagingSliceCount(const CollectiveCall& call);

// `calls` with each call that is cut replaced by its slices or pieces, in order
// (CollectiveCall::stagingSlice set on each); `calls` itself where none is cut (then *storage is
// left empty).
const std::vector<CollectiveCall>& cutIntoStagingSlices(const std::vector<CollectiveCall>& calls,
                                                        std::vector<CollectiveCall>* storage);

}  // namespace weft
