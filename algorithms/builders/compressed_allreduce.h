// Compressed all-reduce on float gradients (float32, float16, bfloat16), accumulated in float32
// scratch, with a codec from compression/ (docs/compression.md, "Compressed all-reduce"):
//
//   quantized ring (fp16, bf16, int8, int4): a ring reduce-scatter whose every hop decodes the
//     incoming chunk, adds this rank's values and re-encodes the sum; the owner of each reduced
//     chunk encodes it once more and its bytes go round the ring as they are (all-gather), so
//     every rank decodes the same bytes and ends with the same values. Wire: 2(n-1)/n of the
//     encoded buffer per rank.
//   all-gather (sign, top-k): each rank encodes its own input once; the encoded buffers go round
//     the ring as they are, and every rank decodes and adds all n in rank order (so every rank
//     ends with the same values). Wire: (n-1) encoded buffers per rank.
//
// Every step is a codec step (schedule.h): slices of codecSliceElements elements, a multiple of
// the codec's block, each one encoded chunk of at most slotBytes. Scratch: the float32
// accumulator (count * 4 bytes at offset 0), then the encoded buffers the schedule keeps.
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/schedule.h"
#include "compression/types.h"

namespace weft {

enum class CompressedAlgorithm { QuantizedRing, AllGather };

struct CompressedAllReduceParams {
  size_t count = 0;        // elements
  size_t elementSize = 4;  // bytes per element of the call's type (4 or 2)
  int rank = 0;
  std::vector<int> ringOrder;  // ranks in ring order
  bool average = false;        // divide the result by n (in float, before the final cast)
  compression::CodecConfig codec;
  size_t slotBytes = 0;  // the largest message the transports carry
};

// Ring re-encoding for codecs that stay accurate when re-applied to sums, all-gather otherwise.
CompressedAlgorithm compressedAlgorithmFor(const compression::CodecConfig& codec);

// Elements per slice: the largest multiple of the codec's granule (block size; 64 otherwise)
// whose encoding fits slotBytes, at most 1M elements. 0 when not even one granule fits.
size_t compressedSliceElements(const compression::CodecConfig& codec, size_t slotBytes);

// Encoded bytes of `count` elements cut into slices of sliceElements (one codec chunk each).
size_t compressedEncodedBytes(const compression::CodecConfig& codec, size_t sliceElements, size_t count);

Schedule buildCompressedAllReduce(const CompressedAllReduceParams& params);

}  // namespace weft
