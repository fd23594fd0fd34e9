// CUDA kernels of exact and approximate top-k; see topk.h for the method and why it gives the
// CPU selector's bytes. Keys and values are handled as bit patterns (uint32), so NaN payloads
// travel unchanged and no float operation can round differently.
#include "compression/cuda/topk.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cub/block/block_load.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "compression/topk_sample.h"

namespace weft::compression::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kItems = 16;                     // elements per thread in a tile
constexpr uint32_t kTile = kThreads * kItems;  // 4096: a tile's counts fit 16 bits each
constexpr unsigned kMaxBlocks = 512;           // grid-stride beyond; bounds the global atomics
constexpr int kPasses = 3;                     // digits of 11, 10, 10 bits: the 31-bit key

__host__ __device__ constexpr int widthOf(int pass) { return pass == 0 ? 11 : 10; }
__host__ __device__ constexpr int shiftOf(int pass) { return 20 - 10 * pass; }

__device__ __forceinline__ uint32_t keyOf(uint32_t bits) { return bits & 0x7fffffffu; }

// What a radix selection knows before a pass: the key bits chosen so far (the elements still in
// the running share them) and how many of the wanted elements are still to be found among them.
// After the last pass, prefix is the cut key K and needed the number of elements equal to K
// taken (lowest indices first).
struct Level {
  uint32_t prefix;
  uint32_t needed;
};

// One radix selection in the workspace; zeroed by the encode before its first pass.
struct Select {
  uint32_t hist[kPasses][2048];
  Level level[kPasses + 1];
  uint32_t atLeast;         // approximate: #{key >= the sample's threshold}, counted in pass 0
  uint32_t clampToAtLeast;  // approximate: select min(needed, atLeast) elements
};

struct State {
  Select sample;  // the threshold: the r-th largest sampled key
  Select main;    // the chunk's top k (or top min(k, atLeast))
};

// Keys of the chunk.
struct ChunkKeys {
  const uint32_t* bits;
  size_t n;
  __device__ uint32_t operator()(size_t i) const { return keyOf(bits[i]); }
};

// Keys of the sample, read in place: element i is lane i % 16 of sample line i / 16.
struct SampleKeys {
  const uint32_t* bits;
  size_t n;  // m
  uint64_t seed;
  uint64_t lines;
  __device__ uint32_t operator()(size_t i) const {
    return keyOf(bits[topkSampleLine(seed, static_cast<uint32_t>(i / 16), lines) * 16 + i % 16]);
  }
};

using BlockScan = cub::BlockScan<uint32_t, kThreads>;

// The level after `pass`, from its histogram: the highest bin b whose count, with the counts of
// the bins above it, reaches `needed`. Every block computes it (one scan of at most 2048 bins, to
// save a launch per pass); block 0 records it. All threads of the block must call it.
__device__ Level advance(Select* s, int pass) {
  __shared__ BlockScan::TempStorage scan;
  __shared__ Level next;
  const int width = widthOf(pass);
  const uint32_t bins = 1u << width;
  const Level cur = s->level[pass];
  const uint32_t needed = pass == 0 && s->clampToAtLeast ? min(cur.needed, s->atLeast) : cur.needed;
  // Thread t holds 8 bins in descending order, from bin (bins - 1 - 8t) down.
  uint32_t count[8];
  uint32_t sum = 0;
  for (int j = 0; j < 8; ++j) {
    const uint32_t p = threadIdx.x * 8 + j;
    count[j] = p < bins ? s->hist[pass][bins - 1 - p] : 0;
    sum += count[j];
  }
  // Only with a corrupt histogram would no bin qualify; then the cut is the bin's lowest key.
  if (threadIdx.x == 0) next = Level{cur.prefix << width, 0};
  uint32_t above;
  BlockScan(scan).ExclusiveSum(sum, above);
  __syncthreads();
  for (int j = 0; j < 8; ++j) {
    const uint32_t p = threadIdx.x * 8 + j;
    if (p >= bins) break;
    const uint32_t through = above + count[j];
    // needed == 0 (nothing to select) picks the top bin, so the cut ends at the largest key.
    if (through >= needed && (above < needed || p == 0))
      next = Level{(cur.prefix << width) | (bins - 1 - p), needed - above};
    above = through;
  }
  __syncthreads();
  const Level result = next;
  if (blockIdx.x == 0 && threadIdx.x == 0) s->level[pass + 1] = result;
  return result;
}

// Pass `pass` of a radix selection over `keys`: the histogram of the pass's digit over the keys
// that share the prefix. Pass 0 starts the selection with `needed` wanted elements; with a
// `threshold` selection it also counts the keys at or above that selection's cut.
template <class Keys>
__global__ void __launch_bounds__(kThreads)
    histogramKernel(Keys keys, Select* s, int pass, uint32_t needed, Select* threshold) {
  __shared__ uint32_t hist[2048];
  __shared__ uint32_t atLeast;
  Level cur{0, needed};
  if (pass > 0) cur = advance(s, pass - 1);
  const uint32_t t = threshold != nullptr ? advance(threshold, kPasses - 1).prefix : 0;
  if (pass == 0 && blockIdx.x == 0 && threadIdx.x == 0) {
    s->level[0] = cur;
    s->clampToAtLeast = threshold != nullptr;
  }
  const int shift = shiftOf(pass), width = widthOf(pass);
  const uint32_t mask = (1u << width) - 1;
  for (uint32_t b = threadIdx.x; b < 2048; b += kThreads) hist[b] = 0;
  if (threadIdx.x == 0) atLeast = 0;
  __syncthreads();
  uint32_t mine = 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * kThreads;
  for (size_t i = blockIdx.x * static_cast<size_t>(kThreads) + threadIdx.x; i < keys.n; i += stride) {
    const uint32_t key = keys(i);
    if ((key >> (shift + width)) == cur.prefix) atomicAdd(&hist[(key >> shift) & mask], 1u);
    mine += key >= t;
  }
  if (threshold != nullptr && mine != 0) atomicAdd(&atLeast, mine);
  __syncthreads();
  for (uint32_t b = threadIdx.x; b <= mask; b += kThreads)
    if (hist[b] != 0) atomicAdd(&s->hist[pass][b], hist[b]);
  if (threshold != nullptr && threadIdx.x == 0 && atLeast != 0) atomicAdd(&s->atLeast, atLeast);
}

// Finishes the selection (the cut) and counts per tile: #{key > K} | #{key == K} << 16.
__global__ void __launch_bounds__(kThreads)
    countTilesKernel(const uint32_t* bits, size_t n, Select* s, uint32_t* tileCounts, size_t tiles) {
  using BlockReduce = cub::BlockReduce<uint32_t, kThreads>;
  __shared__ BlockReduce::TempStorage reduce;
  const Level cut = advance(s, kPasses - 1);
  for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const size_t base = tile * kTile;
    uint32_t packed = 0;
    for (int j = 0; j < kItems; ++j) {
      const size_t i = base + j * kThreads + threadIdx.x;
      if (i >= n) break;
      const uint32_t key = keyOf(bits[i]);
      packed += key > cut.prefix ? 1u : key == cut.prefix ? 1u << 16 : 0u;
    }
    const uint32_t total = BlockReduce(reduce).Sum(packed);
    if (threadIdx.x == 0) tileCounts[tile] = total;
    __syncthreads();  // before `reduce` is used again
  }
}

// One block: for each tile, the elements equal to K before it (written over tileCounts) and
// where its winners start in the output (outBase, tiles + 1 entries); then the header.
__global__ void __launch_bounds__(kThreads) scanTilesKernel(uint32_t* tileCounts, uint32_t* outBase, size_t tiles,
                                                            const Select* s, uint32_t k, uint32_t* header) {
  __shared__ BlockScan::TempStorage scan;
  const Level cut = s->level[kPasses];
  uint32_t equalCarry = 0, outCarry = 0;
  for (size_t first = 0; first < tiles; first += kTile) {
    uint32_t equal[kItems], out[kItems], before[kItems], outBefore[kItems];
    for (int j = 0; j < kItems; ++j) {
      const size_t tile = first + threadIdx.x * kItems + j;
      const uint32_t packed = tile < tiles ? tileCounts[tile] : 0;
      equal[j] = packed >> 16;
      out[j] = packed & 0xffffu;  // greater than K; plus the tile's share of the equal ones below
    }
    uint32_t equalTotal, outTotal;
    BlockScan(scan).ExclusiveSum(equal, before, equalTotal);
    __syncthreads();
    for (int j = 0; j < kItems; ++j) {
      before[j] += equalCarry;
      out[j] += before[j] >= cut.needed ? 0 : min(equal[j], cut.needed - before[j]);
    }
    BlockScan(scan).ExclusiveSum(out, outBefore, outTotal);
    __syncthreads();
    for (int j = 0; j < kItems; ++j) {
      const size_t tile = first + threadIdx.x * kItems + j;
      if (tile < tiles) {
        tileCounts[tile] = before[j];
        outBase[tile] = outCarry + outBefore[j];
      }
    }
    equalCarry += equalTotal;
    outCarry += outTotal;
  }
  if (threadIdx.x == 0) {
    outBase[tiles] = outCarry;
    header[0] = outCarry;  // stored
    header[1] = k;         // capacity
  }
}

// Each tile with winners writes them, in index order, from outBase[tile] on.
__global__ void __launch_bounds__(kThreads)
    writeTilesKernel(const uint32_t* bits, size_t n, const Select* s, const uint32_t* equalBefore,
                     const uint32_t* outBase, size_t tiles, uint32_t* indices, uint32_t* values) {
  using BlockLoad = cub::BlockLoad<uint32_t, kThreads, kItems, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  __shared__ union {
    BlockLoad::TempStorage load;
    BlockScan::TempStorage scan;
  } temp;
  const Level cut = s->level[kPasses];
  for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const uint32_t first = outBase[tile];
    if (outBase[tile + 1] == first) continue;  // the same for the whole block
    const size_t base = tile * kTile;
    const int valid = static_cast<int>(min(static_cast<size_t>(kTile), n - base));
    // Blocked: thread t holds elements base + 16t .. base + 16t + 15, so scans follow index order.
    uint32_t v[kItems];
    BlockLoad(temp.load).Load(bits + base, v, valid, 0u);
    __syncthreads();
    const int mineFirst = threadIdx.x * kItems;
    uint32_t equal = 0;
    for (int j = 0; j < kItems; ++j) equal += mineFirst + j < valid && keyOf(v[j]) == cut.prefix;
    uint32_t equalRank;
    BlockScan(temp.scan).ExclusiveSum(equal, equalRank);
    __syncthreads();
    equalRank += equalBefore[tile];
    uint32_t wins = 0, winMask = 0;
    for (int j = 0; j < kItems; ++j) {
      if (mineFirst + j >= valid) break;
      const uint32_t key = keyOf(v[j]);
      bool win = key > cut.prefix;
      if (key == cut.prefix) win = equalRank++ < cut.needed;
      if (win) {
        winMask |= 1u << j;
        ++wins;
      }
    }
    uint32_t pos;
    BlockScan(temp.scan).ExclusiveSum(wins, pos);
    __syncthreads();  // before `temp` is loaded into again
    pos += first;
    for (int j = 0; j < kItems; ++j) {
      if (winMask & (1u << j)) {
        indices[pos] = static_cast<uint32_t>(base + mineFirst + j);
        values[pos] = v[j];
        ++pos;
      }
    }
  }
}

__global__ void scatterKernel(const uint32_t* encoded, size_t count, uint32_t* out, bool accumulate, float alpha) {
  const uint32_t stored = encoded[0], capacity = encoded[1];
  const uint32_t* indices = encoded + 2;
  const uint32_t* values = encoded + 2 + capacity;
  for (size_t j = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; j < stored;
       j += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint32_t i = indices[j];
    if (i >= count) continue;
    // As the CPU: o + alpha * v, each rounded once (the file is built with --fmad=false).
    out[i] = accumulate
                 ? __float_as_uint(__fadd_rn(__uint_as_float(out[i]), __fmul_rn(alpha, __uint_as_float(values[j]))))
                 : values[j];
  }
}

unsigned blocksFor(size_t n) {
  const size_t blocks = (n + kTile - 1) / kTile;
  return static_cast<unsigned>(blocks == 0 ? 1 : blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

struct Layout {
  size_t tiles;
  size_t countsOffset;  // uint32 per tile
  size_t baseOffset;    // uint32 per tile, plus one
  size_t bytes;
};

Layout layoutFor(size_t count) {
  auto align = [](size_t bytes) { return (bytes + 255) / 256 * 256; };
  Layout l;
  l.tiles = (count + kTile - 1) / kTile;
  l.countsOffset = align(sizeof(State));
  l.baseOffset = l.countsOffset + align(4 * l.tiles);
  l.bytes = l.baseOffset + align(4 * (l.tiles + 1));
  return l;
}

ncclResult_t checked(cudaError_t err) { return err == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError; }

bool isTopK(CodecKind kind) { return kind == CodecKind::kTopK || kind == CodecKind::kTopKApprox; }

}  // namespace

size_t topkWorkspaceBytes(size_t count) { return layoutFor(count).bytes; }

ncclResult_t topkEncode(const CodecConfig& c, const float* x, size_t count, void* dst, const EncodeContext& ctx,
                        void* workspace, size_t workspaceBytes, void* stream) {
  if (!isTopK(c.kind) || count > 0xffffffffull) return ncclInvalidArgument;
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  if (count == 0) return checked(cudaMemsetAsync(dst, 0, 8, st));  // stored 0, capacity 0
  const Layout layout = layoutFor(count);
  if (workspace == nullptr || workspaceBytes < layout.bytes || reinterpret_cast<uintptr_t>(workspace) % 4 != 0)
    return ncclInvalidArgument;
  const size_t k = topkCount(c, count);
  const uint32_t sampleLines = topkSampleLines(c.topkSampleSize);
  const bool sampled = c.kind == CodecKind::kTopKApprox && topkUsesSample(count, k, sampleLines);

  uint8_t* ws = static_cast<uint8_t*>(workspace);
  State* state = reinterpret_cast<State*>(ws);
  uint32_t* tileCounts = reinterpret_cast<uint32_t*>(ws + layout.countsOffset);
  uint32_t* outBase = reinterpret_cast<uint32_t*>(ws + layout.baseOffset);
  uint32_t* header = static_cast<uint32_t*>(dst);
  const uint32_t* bits = reinterpret_cast<const uint32_t*>(x);

  if (cudaMemsetAsync(state, 0, sizeof(State), st) != cudaSuccess) return ncclUnhandledCudaError;
  Select* threshold = nullptr;
  if (sampled) {
    const size_t m = static_cast<size_t>(sampleLines) * 16;
    const size_t r = topkSampleRank(c.topkOversample, k, m, count);
    const SampleKeys keys{bits, m, topkSampleSeed(ctx), count / 16};
    for (int pass = 0; pass < kPasses; ++pass)
      histogramKernel<<<blocksFor(m), kThreads, 0, st>>>(keys, &state->sample, pass, static_cast<uint32_t>(r), nullptr);
    threshold = &state->sample;
  }
  const ChunkKeys keys{bits, count};
  for (int pass = 0; pass < kPasses; ++pass)
    histogramKernel<<<blocksFor(count), kThreads, 0, st>>>(keys, &state->main, pass, static_cast<uint32_t>(k),
                                                           pass == 0 ? threshold : nullptr);
  const unsigned tileBlocks = blocksFor(count);
  countTilesKernel<<<tileBlocks, kThreads, 0, st>>>(bits, count, &state->main, tileCounts, layout.tiles);
  scanTilesKernel<<<1, kThreads, 0, st>>>(tileCounts, outBase, layout.tiles, &state->main, static_cast<uint32_t>(k),
                                          header);
  writeTilesKernel<<<tileBlocks, kThreads, 0, st>>>(bits, count, &state->main, tileCounts, outBase, layout.tiles,
                                                    header + 2, header + 2 + k);
  return checked(cudaGetLastError());
}

ncclResult_t topkDecode(const CodecConfig& c, const void* src, size_t count, float* out, bool accumulate, float alpha,
                        void* stream) {
  if (!isTopK(c.kind)) return ncclInvalidArgument;
  if (count == 0) return ncclSuccess;
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  if (!accumulate && cudaMemsetAsync(out, 0, count * sizeof(float), st) != cudaSuccess) return ncclUnhandledCudaError;
  // The grid covers the capacity k; the kernel reads how many pairs are stored.
  const size_t k = topkCount(c, count);
  const unsigned blocks = static_cast<unsigned>(k / kThreads + 1 < 1024 ? k / kThreads + 1 : 1024);
  scatterKernel<<<blocks, kThreads, 0, st>>>(static_cast<const uint32_t*>(src), count, reinterpret_cast<uint32_t*>(out),
                                             accumulate, alpha);
  return checked(cudaGetLastError());
}

}  // namespace weft::compression::cuda
