/* weft's compressed all-reduce: a lossy all-reduce of float gradients (float32, float16,
 * bfloat16) with a quantizing, sparsifying or sign codec, and error feedback.
 *
 * Unchanged programs opt in through the environment instead (read at communicator creation):
 *
 *   WEFT_COMPRESSION=fp16|bf16|int8|int4|sign|topk:RATIO[,ef][,min_bytes=N]
 *
 * makes every ncclAllReduce with ncclSum or ncclAvg on float32/float16/bfloat16 of at least N
 * bytes (default 0) compressed; ",ef" keeps an error-feedback residual per (send buffer
 * address, count). Unset, empty or "off": exact (the default). Algorithms, bytes on the wire
 * and the error bounds: docs/compression.md. */
#ifndef WEFT_COMPRESSION_H_
#define WEFT_COMPRESSION_H_

#include <stddef.h>
#include <stdint.h>

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  weftCodecFp16 = 0,      /* cast to IEEE binary16 (round to nearest even) */
  weftCodecBf16 = 1,      /* cast to bfloat16 */
  weftCodecInt8 = 2,      /* int8 per block of blockSize elements, one float scale per block */
  weftCodecInt4 = 3,      /* 4-bit per block, one float scale per block */
  weftCodecSign = 4,      /* sign bit per element, scale = mean |x| of the block */
  weftCodecTopK = 5,      /* the topkRatio largest magnitudes, as (index, value) pairs */
  weftCodecTopKApprox = 6 /* top-k above a sampled threshold (Deep Gradient Compression) */
} weftCodec_t;

typedef enum { weftRoundNearest = 0, weftRoundStochastic = 1 } weftRounding_t;

/* A compressor description. Initialize with WEFT_COMPRESSOR_INITIALIZER, then set fields. */
typedef struct {
  size_t size; /* sizeof(weftCompressor_t) */
  weftCodec_t codec;
  unsigned blockSize;      /* int8, int4, sign: elements per scale, a multiple of 8 in [8, 8192] */
  weftRounding_t rounding; /* int8, int4 */
  double topkRatio;        /* top-k: fraction of each slice's elements sent, in (0, 1] */
  uint64_t seed;           /* stochastic rounding and top-k sampling */
} weftCompressor_t;

#define WEFT_COMPRESSOR_INITIALIZER \
  { sizeof(weftCompressor_t), weftCodecInt8, 256, weftRoundNearest, 0.01, 0 }

/* Error-feedback state for one gradient buffer of `count` elements: the float32 residual that
 * compression dropped, added to the next call's input. One per buffer; not thread-safe. */
typedef struct weftErrorFeedback* weftErrorFeedback_t;
ncclResult_t weftErrorFeedbackCreate(size_t count, weftErrorFeedback_t* state);
ncclResult_t weftErrorFeedbackReset(weftErrorFeedback_t state);
/* The residual (count floats), valid until the state is destroyed or used in a call. */
ncclResult_t weftErrorFeedbackResidual(weftErrorFeedback_t state, const float** residual, size_t* count);
ncclResult_t weftErrorFeedbackDestroy(weftErrorFeedback_t state);

/* ncclAllReduce with compression: op ncclSum or ncclAvg, datatype ncclFloat32, ncclFloat16 or
 * ncclBfloat16; `feedback` NULL (none) or a state created for `count`. Every rank must pass the
 * same compressor. On one rank the result is exact. Inside ncclGroupStart/End the feedback state
 * must stay valid until ncclGroupEnd, like the buffers (the compressor is copied). Host memory. */
ncclResult_t weftAllReduceCompressed(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                     ncclRedOp_t op, const weftCompressor_t* compressor, weftErrorFeedback_t feedback,
                                     ncclComm_t comm, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_COMPRESSION_H_ */
