// CUDA kernels of the casts, int8/int4 block quantization and sign codecs; see codecs.h.
// Every float operation is an explicitly rounded intrinsic (__fmul_rn, __fadd_rn, ...), and the
// half and bfloat16 conversions are common/numeric.h's own (host-and-device functions), so the
// results equal the CPU kernels' bit for bit.
#include "compression/cuda/codecs.h"

#include <cuda_runtime.h>

#include <cstdint>

#include "common/numeric.h"
#include "compression/cuda/topk.h"
#include "compression/cuda/workspace.h"
#include "compression/rng.h"

namespace weft::compression::cuda {
namespace {

constexpr float kRoundMagic = 12582912.0f;
constexpr uint32_t kTinyBits = 0x0d800000u;  // 2^-100, as quantize.h

__device__ __forceinline__ float combine(float old, float v, bool accumulate, float alpha) {
  return accumulate ? __fadd_rn(old, __fmul_rn(alpha, v)) : v;
}

// ---- casts ----

__global__ void castEncodeKernel(const float* x, size_t n, uint16_t* out, bool bf16) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    out[i] = bf16 ? floatToBfloat16(x[i]) : floatToHalf(x[i]);
}

__global__ void castDecodeKernel(const uint16_t* in, size_t n, float* out, bool bf16, bool accumulate, float alpha) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float v = bf16 ? bfloat16ToFloat(in[i]) : halfToFloat(in[i]);
    out[i] = combine(out[i], v, accumulate, alpha);
  }
}

// ---- block quantization: one thread block per quantization block ----

__device__ __forceinline__ int8_t quantizeOneDev(float x, float inv, float qmax, bool stochastic, float u) {
  float y = __fmul_rn(x, inv);
  if (stochastic) y = __fadd_rn(y, u);
  float r = __fsub_rn(__fadd_rn(y, kRoundMagic), kRoundMagic);
  if (stochastic) r = r > y ? __fsub_rn(r, 1.0f) : r;
  r = r > qmax ? qmax : r;
  r = r < -qmax ? -qmax : r;
  return static_cast<int8_t>(__float2int_rz(r));
}

__device__ __forceinline__ uint32_t blockMaxBits(const float* x, uint32_t n) {
  __shared__ uint32_t shared;
  if (threadIdx.x == 0) shared = 0;
  __syncthreads();
  uint32_t m = 0;
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) m = max(m, __float_as_uint(x[i]) & 0x7fffffffu);
  atomicMax(&shared, m);
  __syncthreads();
  return shared;
}

__global__ void quantizeEncodeKernel(const float* x, size_t count, uint32_t bs, int bits, bool stochastic,
                                     uint64_t seed, uint64_t firstIndex, uint8_t* encoded) {
  const size_t block = blockIdx.x;
  const size_t start = block * bs;
  const uint32_t n = static_cast<uint32_t>(min(static_cast<size_t>(bs), count - start));
  const size_t blocks = (count + bs - 1) / bs;
  const float* xb = x + start;
  const float qmax = bits == 8 ? 127.0f : 7.0f;
  uint32_t maxBits = blockMaxBits(xb, n);
  float scale, inv;
  if (maxBits > 0x7f7fffffu) {
    scale = __uint_as_float(0x7fc00000u);
    inv = 0.0f;
  } else if (maxBits < kTinyBits) {
    scale = 0.0f;
    inv = 0.0f;
  } else {
    float amax = __uint_as_float(maxBits);
    scale = __fdiv_rn(amax, qmax);
    inv = __fdiv_rn(qmax, amax);
  }
  if (threadIdx.x == 0) reinterpret_cast<float*>(encoded)[block] = scale;
  uint8_t* payload = encoded + blocks * sizeof(float);
  const uint64_t index0 = firstIndex + start;
  auto q = [&](uint32_t i) -> int8_t {
    if (inv == 0.0f) return 0;
    float u = stochastic ? rngUniformAt(seed, index0 + i) : 0.0f;
    return quantizeOneDev(xb[i], inv, qmax, stochastic, u);
  };
  if (bits == 8) {
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) payload[start + i] = static_cast<uint8_t>(q(i));
    return;
  }
  uint8_t* out = payload + block * (bs / 2);
  const uint32_t half = (n + 1) / 2;
  for (uint32_t j = threadIdx.x; j < half; j += blockDim.x) {
    uint8_t lo = static_cast<uint8_t>(q(j) & 15);
    uint8_t hi = j + half < n ? static_cast<uint8_t>(q(j + half) << 4) : 0;
    out[j] = lo | hi;
  }
}

__global__ void quantizeDecodeKernel(const uint8_t* encoded, size_t count, uint32_t bs, int bits, float* out,
                                     bool accumulate, float alpha) {
  const size_t blocks = (count + bs - 1) / bs;
  const uint8_t* payload = encoded + blocks * sizeof(float);
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t block = i / bs;
    const float scale = reinterpret_cast<const float*>(encoded)[block];
    int8_t q;
    if (bits == 8) {
      q = static_cast<int8_t>(payload[i]);
    } else {
      const size_t start = block * bs;
      const uint32_t n = static_cast<uint32_t>(min(static_cast<size_t>(bs), count - start));
      const uint32_t half = (n + 1) / 2;
      const uint32_t j = static_cast<uint32_t>(i - start);
      int8_t b = static_cast<int8_t>(payload[block * (bs / 2) + (j < half ? j : j - half)]);
      q = j < half ? static_cast<int8_t>(static_cast<int8_t>(b << 4) >> 4) : static_cast<int8_t>(b >> 4);
    }
    float v = __fmul_rn(__int2float_rn(q), scale);
    out[i] = combine(out[i], v, accumulate, alpha);
  }
}

// ---- sign: the scale in sign.h's fixed order (16 lanes, then the fold) ----

__global__ void signEncodeKernel(const float* x, size_t count, uint32_t bs, uint8_t* encoded) {
  const size_t block = blockIdx.x;
  const size_t start = block * bs;
  const uint32_t n = static_cast<uint32_t>(min(static_cast<size_t>(bs), count - start));
  const size_t blocks = (count + bs - 1) / bs;
  const float* xb = x + start;
  __shared__ float lanes[16];
  uint32_t maxBits = blockMaxBits(xb, n);
  if (threadIdx.x < 16) {
    float s = 0.0f;
    for (uint32_t i = threadIdx.x; i < n; i += 16) s = __fadd_rn(s, fabsf(xb[i]));
    // Lanes past the block's end added +0 on the CPU: no change.
    lanes[threadIdx.x] = s;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float scale;
    if (maxBits > 0x7f7fffffu) {
      scale = __uint_as_float(0x7fc00000u);
    } else {
      float l[16];
      for (int i = 0; i < 16; ++i) l[i] = lanes[i];
      for (int step = 8; step >= 1; step /= 2)
        for (int i = 0; i < step; ++i) l[i] = __fadd_rn(l[i], l[i + step]);
      scale = __fdiv_rn(l[0], __uint2float_rn(n));
    }
    reinterpret_cast<float*>(encoded)[block] = scale;
  }
  uint8_t* payload = encoded + blocks * sizeof(float) + start / 8;
  for (uint32_t byte = threadIdx.x; byte < (n + 7) / 8; byte += blockDim.x) {
    uint8_t b = 0;
    for (uint32_t j = 0; j < 8 && byte * 8 + j < n; ++j)
      b |= static_cast<uint8_t>((__float_as_uint(xb[byte * 8 + j]) >> 31) << j);
    payload[byte] = b;
  }
}

__global__ void signDecodeKernel(const uint8_t* encoded, size_t count, uint32_t bs, float* out, bool accumulate,
                                 float alpha) {
  const size_t blocks = (count + bs - 1) / bs;
  const uint8_t* payload = encoded + blocks * sizeof(float);
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint32_t scaleBits = __float_as_uint(reinterpret_cast<const float*>(encoded)[i / bs]);
    float v = __uint_as_float(scaleBits | (static_cast<uint32_t>(payload[i / 8] >> (i % 8)) & 1u) << 31);
    out[i] = combine(out[i], v, accumulate, alpha);
  }
}

unsigned gridFor(size_t n, unsigned threads) {
  size_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65536 ? (blocks == 0 ? 1 : blocks) : 65536);
}

ncclResult_t launched(const char* what) {
  cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
}

}  // namespace

bool supports(CodecKind kind) {
  return kind == CodecKind::kFp16 || kind == CodecKind::kBf16 || kind == CodecKind::kInt8 || kind == CodecKind::kInt4 ||
         kind == CodecKind::kSign || kind == CodecKind::kTopK || kind == CodecKind::kTopKApprox;
}

ncclResult_t encode(const CodecConfig& c, const float* x, size_t count, void* dst, const EncodeContext& ctx,
                    void* stream) {
  if (!supports(c.kind)) return ncclInvalidUsage;
  if (c.kind == CodecKind::kTopK || c.kind == CodecKind::kTopKApprox) {
    const size_t bytes = topkWorkspaceBytes(count);
    void* workspace = nullptr;
    if (count > 0) {
      ncclResult_t got = streamWorkspace(stream, bytes, &workspace);
      if (got != ncclSuccess) return got;
    }
    return topkEncode(c, x, count, dst, ctx, workspace, bytes, stream);
  }
  if (count == 0) return ncclSuccess;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  uint8_t* out = static_cast<uint8_t*>(dst);
  const unsigned blocks = static_cast<unsigned>((count + c.blockSize - 1) / c.blockSize);
  switch (c.kind) {
    case CodecKind::kFp16:
    case CodecKind::kBf16:
      castEncodeKernel<<<gridFor(count, 256), 256, 0, s>>>(x, count, reinterpret_cast<uint16_t*>(out),
                                                           c.kind == CodecKind::kBf16);
      break;
    case CodecKind::kInt8:
    case CodecKind::kInt4:
      quantizeEncodeKernel<<<blocks, 256, 0, s>>>(x, count, c.blockSize, c.kind == CodecKind::kInt8 ? 8 : 4,
                                                  c.rounding == Rounding::kStochastic, ctx.seed, ctx.firstIndex, out);
      break;
    case CodecKind::kSign: signEncodeKernel<<<blocks, 256, 0, s>>>(x, count, c.blockSize, out); break;
    default: return ncclInvalidUsage;
  }
  return launched("encode");
}

ncclResult_t decode(const CodecConfig& c, const void* src, size_t count, float* out, bool accumulate, float alpha,
                    void* stream) {
  if (!supports(c.kind)) return ncclInvalidUsage;
  if (c.kind == CodecKind::kTopK || c.kind == CodecKind::kTopKApprox)
    return topkDecode(c, src, count, out, accumulate, alpha, stream);
  if (count == 0) return ncclSuccess;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const uint8_t* in = static_cast<const uint8_t*>(src);
  switch (c.kind) {
    case CodecKind::kFp16:
    case CodecKind::kBf16:
      castDecodeKernel<<<gridFor(count, 256), 256, 0, s>>>(reinterpret_cast<const uint16_t*>(in), count, out,
                                                           c.kind == CodecKind::kBf16, accumulate, alpha);
      break;
    case CodecKind::kInt8:
    case CodecKind::kInt4:
      quantizeDecodeKernel<<<gridFor(count, 256), 256, 0, s>>>(
          in, count, c.blockSize, c.kind == CodecKind::kInt8 ? 8 : 4, out, accumulate, alpha);
      break;
    case CodecKind::kSign:
      signDecodeKernel<<<gridFor(count, 256), 256, 0, s>>>(in, count, c.blockSize, out, accumulate, alpha);
      break;
    default: return ncclInvalidUsage;
  }
  return launched("decode");
}

}  // namespace weft::compression::cuda
