// CUDA kernels of reduce.h's operations; see cuda/reduce.h. One grid-stride kernel template
// for all three: each thread moves 16 bytes at a time when every pointer is 16-byte aligned
// (elements one by one otherwise, and for the tail), applying a functor built from
// reduce_element.h to each element. The file is compiled with --fmad=false, so no product is
// fused into a sum: the same rounding as the CPU.
#include "common/cuda/reduce.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <tuple>
#include <utility>

#include "common/reduce_element.h"
#include "common/status.h"

namespace weft::cuda {
namespace {

using namespace elementwise;

constexpr int kThreads = 256;
// Enough blocks to fill any current GPU several times over; the grid-stride loop covers the rest.
constexpr size_t kMaxBlocks = 8192;
constexpr size_t kVectorBytes = 16;

// Functors on one element. `bind` runs once per thread, before the loop: a device scalar is
// read there, when the kernel runs, as ncclScalarDevice asks.
template <class C, class Op>
struct Reduce {
  using S = typename C::Storage;
  __device__ Reduce bind() const { return *this; }
  __device__ S operator()(S x, S y) const { return reduceElement<C, Op>(x, y); }
};

template <class C>
struct Scale {
  using S = typename C::Storage;
  const S* scalarOnDevice;  // null: use `scalarNow`
  S scalarNow;
  typename C::Compute factor;
  __device__ Scale bind() const {
    Scale bound = *this;
    bound.factor = C::load(scalarOnDevice ? *scalarOnDevice : scalarNow);
    return bound;
  }
  __device__ S operator()(S x, S) const { return scaleElement<C>(x, factor); }
};

template <class C>
struct Divide {
  using S = typename C::Storage;
  uint64_t divisor;
  __device__ Divide bind() const { return *this; }
  __device__ S operator()(S x, S) const { return divideElement<C>(x, divisor); }
};

// dst[i] = f(a[i], b[i]) (b null: f(a[i], a[i])).
template <class S, class F>
__global__ void elementwiseKernel(S* dst, const S* a, const S* b, size_t count, bool vectorized, F unbound) {
  const F f = unbound.bind();
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  constexpr size_t kPerVector = kVectorBytes / sizeof(S);
  size_t done = 0;
  if (vectorized) {
    const size_t vectors = count / kPerVector;
    const uint4* av = reinterpret_cast<const uint4*>(a);
    const uint4* bv = reinterpret_cast<const uint4*>(b ? b : a);
    uint4* dv = reinterpret_cast<uint4*>(dst);
    for (size_t v = first; v < vectors; v += stride) {
      const uint4 x = av[v], y = bv[v];
      S xs[kPerVector], ys[kPerVector], rs[kPerVector];
      memcpy(xs, &x, kVectorBytes);
      memcpy(ys, &y, kVectorBytes);
#pragma unroll
      for (size_t k = 0; k < kPerVector; ++k) rs[k] = f(xs[k], ys[k]);
      uint4 r;
      memcpy(&r, rs, kVectorBytes);
      dv[v] = r;
    }
    done = vectors * kPerVector;
  }
  for (size_t i = done + first; i < count; i += stride) dst[i] = f(a[i], b ? b[i] : a[i]);
}

bool aligned(const void* p) { return (reinterpret_cast<uintptr_t>(p) % kVectorBytes) == 0; }

template <class S, class F>
ncclResult_t launch(const char* what, void* dst, const void* a, const void* b, size_t count, F f, void* stream) {
  if (count == 0) return ncclSuccess;
  bool vectorized = aligned(dst) && aligned(a) && (!b || aligned(b));
  constexpr size_t kPerVector = kVectorBytes / sizeof(S);
  const size_t items = vectorized ? (count + kPerVector - 1) / kPerVector : count;  // a thread each
  const size_t blocks = std::min(kMaxBlocks, (items + kThreads - 1) / kThreads);
  // cudaLaunchKernel returns this launch's own status; cudaGetLastError after <<<>>> would also
  // report (and clear) an earlier error of the application's.
  S* d = static_cast<S*>(dst);
  const S* x = static_cast<const S*>(a);
  const S* y = static_cast<const S*>(b);
  void* arguments[] = {&d, &x, &y, &count, &vectorized, &f};
  const cudaError_t err =
      cudaLaunchKernel(reinterpret_cast<const void*>(&elementwiseKernel<S, F>), dim3(static_cast<unsigned>(blocks)),
                       dim3(kThreads), arguments, 0, static_cast<cudaStream_t>(stream));
  if (err != cudaSuccess)
    return fail(ncclUnhandledCudaError, "%s: launching the CUDA kernel failed: %s", what, cudaGetErrorString(err));
  return ncclSuccess;
}

template <class C, class Op>
ncclResult_t reduceTyped(void* dst, const void* a, const void* b, size_t count, void* stream) {
  return launch<typename C::Storage>("reduction on device memory", dst, a, b, count, Reduce<C, Op>{}, stream);
}

template <class C>
ncclResult_t scaleTyped(void* dst, const void* src, size_t count, const void* scalar, ScalarAt at, void* stream) {
  using S = typename C::Storage;
  Scale<C> f{};
  if (at == ScalarAt::Device)
    f.scalarOnDevice = static_cast<const S*>(scalar);
  else
    std::memcpy(&f.scalarNow, scalar, sizeof(S));
  return launch<S>("PreMulSum scaling on device memory", dst, src, nullptr, count, f, stream);
}

template <class C>
ncclResult_t divideTyped(void* dst, const void* src, size_t count, uint64_t divisor, void* stream) {
  return launch<typename C::Storage>("ncclAvg's division on device memory", dst, src, nullptr, count,
                                     Divide<C>{divisor}, stream);
}

using ReduceFn = ncclResult_t (*)(void*, const void*, const void*, size_t, void*);
using ScaleFn = ncclResult_t (*)(void*, const void*, size_t, const void*, ScalarAt, void*);
using DivideFn = ncclResult_t (*)(void*, const void*, size_t, uint64_t, void*);

struct KernelTable {
  ReduceFn reduce[ncclNumTypes][4];  // [type][ReduceOp]
  ScaleFn scale[ncclNumTypes];
  DivideFn divide[ncclNumTypes];
};

template <size_t... I>
constexpr KernelTable makeTable(std::index_sequence<I...>) {
  KernelTable t{};
  ((t.reduce[I][0] = &reduceTyped<std::tuple_element_t<I, Codecs>, SumOp>,
    t.reduce[I][1] = &reduceTyped<std::tuple_element_t<I, Codecs>, ProdOp>,
    t.reduce[I][2] = &reduceTyped<std::tuple_element_t<I, Codecs>, MaxOp>,
    t.reduce[I][3] = &reduceTyped<std::tuple_element_t<I, Codecs>, MinOp>,
    t.scale[I] = &scaleTyped<std::tuple_element_t<I, Codecs>>,
    t.divide[I] = &divideTyped<std::tuple_element_t<I, Codecs>>),
   ...);
  return t;
}

const KernelTable kTable = makeTable(std::make_index_sequence<ncclNumTypes>());

ncclResult_t checkType(const char* function, ncclDataType_t type) {
  if (static_cast<int>(type) < 0 || type >= ncclNumTypes)
    return fail(ncclInvalidArgument, "%s: datatype %d is not an ncclDataType_t", function, static_cast<int>(type));
  return ncclSuccess;
}

}  // namespace

ncclResult_t reduceBuffers(void* dst, const void* a, const void* b, size_t count, ncclDataType_t type, ReduceOp op,
                           void* stream) {
  WEFT_CHECK(checkType("weft::cuda::reduceBuffers", type));
  const int o = static_cast<int>(op);
  if (o < 0 || o > 3) return fail(ncclInvalidArgument, "weft::cuda::reduceBuffers: op %d is not a ReduceOp", o);
  return kTable.reduce[type][o](dst, a, b, count, stream);
}

ncclResult_t scaleBuffer(void* dst, const void* src, size_t count, ncclDataType_t type, const void* scalar,
                         ScalarAt scalarAt, void* stream) {
  WEFT_CHECK(checkType("weft::cuda::scaleBuffer", type));
  if (!scalar) return fail(ncclInvalidArgument, "weft::cuda::scaleBuffer: scalar is null");
  return kTable.scale[type](dst, src, count, scalar, scalarAt, stream);
}

ncclResult_t divideBuffer(void* dst, const void* src, size_t count, ncclDataType_t type, uint64_t divisor,
                          void* stream) {
  WEFT_CHECK(checkType("weft::cuda::divideBuffer", type));
  return kTable.divide[type](dst, src, count, divisor == 0 ? 1 : divisor, stream);
}

}  // namespace weft::cuda
