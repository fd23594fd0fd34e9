// Compressed all-reduce across rank processes: every codec on 2, 3, 4 and 8 ranks against the
// bound of docs/compression.md ("Compressed all-reduce") around the exact double-precision
// sum; every rank ends with the same bytes; error feedback keeps the accumulated error bounded
// (sum of results + residuals == sum of exact results); WEFT_COMPRESSION through ncclAllReduce;
// a wrong WEFT_COMPRESSION fails communicator creation naming the valid forms.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "algorithms/builders/compressed_allreduce.h"
#include "compression/cast.h"
#include "nccl.h"
#include "runtime/comm/communicator.h"
#include "runtime/comm/compression_config.h"
#include "tests/support/multiprocess.h"
#include "weft/compression.h"

using namespace weft;
using namespace weft::testing;

namespace {

// A deterministic value in (-1, 1) times a per-block magnitude, so block scales differ.
double sample(int rank, size_t i, unsigned seed) {
  uint64_t x = (static_cast<uint64_t>(seed) << 40) ^ (static_cast<uint64_t>(rank) << 32) ^ i;
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  double u = static_cast<double>(x >> 11) / 9007199254740992.0 * 2.0 - 1.0;
  return u * (1.0 + static_cast<double>((i / 300 + rank) % 7));
}

// The inputs of every rank as the call's type holds them (as float).
std::vector<std::vector<float>> inputs(int nranks, size_t count, ncclDataType_t type, unsigned seed) {
  std::vector<std::vector<float>> x(nranks, std::vector<float>(count));
  std::vector<uint16_t> half(count);
  for (int r = 0; r < nranks; ++r) {
    for (size_t i = 0; i < count; ++i) x[r][i] = static_cast<float>(sample(r, i, seed));
    if (type != ncclFloat32) {
      compression::floatToHalfArray(x[r].data(), count, half.data(), type == ncclBfloat16);
      compression::halfToFloatArray(half.data(), count, x[r].data(), type == ncclBfloat16);
    }
  }
  return x;
}

void store(const std::vector<float>& x, ncclDataType_t type, void* out) {
  if (type == ncclFloat32)
    memcpy(out, x.data(), x.size() * 4);
  else
    compression::floatToHalfArray(x.data(), x.size(), static_cast<uint16_t*>(out), type == ncclBfloat16);
}

std::vector<double> load(const void* in, size_t count, ncclDataType_t type) {
  std::vector<float> f(count);
  if (type == ncclFloat32)
    memcpy(f.data(), in, count * 4);
  else
    compression::halfToFloatArray(static_cast<const uint16_t*>(in), count, f.data(), type == ncclBfloat16);
  return std::vector<double>(f.begin(), f.end());
}

compression::CodecConfig configOf(const weftCompressor_t& c) {
  compression::CodecConfig config;
  const compression::CodecKind kinds[] = {compression::CodecKind::kFp16,      compression::CodecKind::kBf16,
                                          compression::CodecKind::kInt8,      compression::CodecKind::kInt4,
                                          compression::CodecKind::kSign,      compression::CodecKind::kTopK,
                                          compression::CodecKind::kTopKApprox};
  config.kind = kinds[c.codec];
  config.blockSize = c.blockSize;
  config.topkRatio = c.topkRatio;
  return config;
}

// The documented per-element bound on |result - exact sum| (docs/compression.md), before the
// division of an average and the final cast to the call's type.
std::vector<double> sumBound(const std::vector<std::vector<float>>& x, const compression::CodecConfig& codec,
                             size_t sliceElements) {
  const int n = static_cast<int>(x.size());
  const size_t count = x[0].size();
  std::vector<double> a(count, 0.0), bound(count, 0.0);
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) a[i] += std::fabs(x[r][i]);
  const double rounding = std::ldexp(1.0, -21);  // float additions in the accumulator
  switch (codec.kind) {
    case compression::CodecKind::kFp16:
    case compression::CodecKind::kBf16: {
      double u = codec.kind == compression::CodecKind::kFp16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
      double grow = std::pow(1.0 + u, n) - 1.0;
      for (size_t i = 0; i < count; ++i)
        bound[i] = a[i] * grow * 1.0001 + n * std::ldexp(1.0, -24) + n * a[i] * rounding;
      break;
    }
    case compression::CodecKind::kInt8:
    case compression::CodecKind::kInt4: {
      double q = codec.kind == compression::CodecKind::kInt8 ? 127.0 : 7.0;
      double grow = std::pow(1.0 + 1.0 / (2.0 * q), n) - 1.0;
      for (size_t b = 0; b < count; b += codec.blockSize) {
        size_t e = std::min(count, b + codec.blockSize);
        double m = 0.0;
        for (int r = 0; r < n; ++r) {
          double mr = 0.0;
          for (size_t i = b; i < e; ++i) mr = std::max(mr, static_cast<double>(std::fabs(x[r][i])));
          m += mr;
        }
        for (size_t i = b; i < e; ++i) bound[i] = m * grow * 1.0001 + n * m * rounding;
      }
      break;
    }
    case compression::CodecKind::kSign:
      for (size_t b = 0; b < count; b += codec.blockSize) {
        size_t e = std::min(count, b + codec.blockSize);
        for (int r = 0; r < n; ++r) {
          double mean = 0.0;
          for (size_t i = b; i < e; ++i) mean += std::fabs(x[r][i]);
          mean /= static_cast<double>(e - b);
          for (size_t i = b; i < e; ++i) bound[i] += (std::fabs(x[r][i]) + mean) * 1.0001;
        }
        for (size_t i = b; i < e; ++i) bound[i] += n * a[i] * rounding;
      }
      break;
    case compression::CodecKind::kTopK:
    case compression::CodecKind::kTopKApprox:
      for (size_t s = 0; s < count; s += sliceElements) {
        size_t e = std::min(count, s + sliceElements);
        size_t k = compression::topkCount(codec, e - s);
        for (int r = 0; r < n; ++r) {
          std::vector<float> mags(e - s);
          for (size_t i = s; i < e; ++i) mags[i - s] = std::fabs(x[r][i]);
          std::nth_element(mags.begin(), mags.begin() + (k - 1), mags.end(), std::greater<float>());
          double tau = mags[k - 1];
          for (size_t i = s; i < e; ++i) bound[i] += std::min<double>(std::fabs(x[r][i]), tau);
        }
        for (size_t i = s; i < e; ++i) bound[i] += n * a[i] * rounding;
      }
      break;
  }
  return bound;
}

uint64_t hashBytes(const void* data, size_t bytes) {
  uint64_t h = 1469598103934665603ull;
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// Every rank holds the same bytes (checked through an exact all-gather of hashes).
bool ranksAgree(ncclComm_t comm, int nranks, const void* data, size_t bytes) {
  uint64_t mine = hashBytes(data, bytes);
  std::vector<uint64_t> all(nranks);
  if (ncclAllGather(&mine, all.data(), 1, ncclUint64, comm, nullptr) != ncclSuccess) return false;
  for (uint64_t h : all)
    if (h != mine) return false;
  return true;
}

struct NamedCompressor {
  const char* name;
  weftCompressor_t compressor;
};

std::vector<NamedCompressor> allCompressors() {
  std::vector<NamedCompressor> list;
  const struct {
    const char* name;
    weftCodec_t codec;
    double ratio;
  } kinds[] = {{"fp16", weftCodecFp16, 0}, {"bf16", weftCodecBf16, 0}, {"int8", weftCodecInt8, 0},
               {"int4", weftCodecInt4, 0}, {"sign", weftCodecSign, 0}, {"topk:0.05", weftCodecTopK, 0.05}};
  for (const auto& k : kinds) {
    weftCompressor_t c = WEFT_COMPRESSOR_INITIALIZER;
    c.codec = k.codec;
    if (k.ratio > 0) c.topkRatio = k.ratio;
    list.push_back({k.name, c});
  }
  return list;
}

// One rank: every codec x (float32 / bfloat16) x (sum / avg) x (in / out of place), checked
// element by element against the bound.
int boundsBody(int rank, int nranks, const ncclUniqueId& id) {
  setenv("WEFT_SLICE_BYTES", "8192", 1);  // several slices per chunk
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) {
    fprintf(stderr, "rank %d: init failed: %s\n", rank, ncclGetLastError(nullptr));
    return 1;
  }
  const size_t count = 30011;
  std::vector<char> send(count * 4), recv(count * 4);
  int failures = 0;
  unsigned seed = 7;
  for (const auto& named : allCompressors()) {
    compression::CodecConfig codec = configOf(named.compressor);
    size_t sliceElements = compressedSliceElements(codec, comm->net.sliceBytes);
    double worstRatio = 0.0, worstError = 0.0, worstBound = 0.0;
    for (ncclDataType_t type : {ncclFloat32, ncclBfloat16})
      for (ncclRedOp_t op : {ncclSum, ncclAvg})
        for (bool inPlace : {false, true}) {
          ++seed;
          auto x = inputs(nranks, count, type, seed);
          store(x[rank], type, send.data());
          void* out = inPlace ? send.data() : recv.data();
          if (weftAllReduceCompressed(send.data(), out, count, type, op, &named.compressor, nullptr, comm, nullptr) !=
              ncclSuccess) {
            fprintf(stderr, "rank %d %s: failed: %s\n", rank, named.name, ncclGetLastError(comm));
            return 2;
          }
          std::vector<double> y = load(out, count, type);
          std::vector<double> bound = sumBound(x, codec, sliceElements);
          const double divisor = op == ncclAvg ? nranks : 1;
          const double cast = type == ncclBfloat16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -23);
          size_t bad = 0;
          for (size_t i = 0; i < count; ++i) {
            double exact = 0.0;
            for (int r = 0; r < nranks; ++r) exact += x[r][i];
            exact /= divisor;
            double b = bound[i] / divisor;
            b += (std::fabs(exact) + b) * cast + 1e-30;
            double err = std::fabs(y[i] - exact);
            if (!(err <= b)) {
              if (bad++ < 3)
                fprintf(stderr, "rank %d %s %s op %d %s [%zu]: %.9g vs exact %.9g: error %.3g > bound %.3g\n", rank,
                        named.name, type == ncclFloat32 ? "float32" : "bfloat16", op, inPlace ? "in" : "out", i, y[i],
                        exact, err, b);
            }
            if (type == ncclFloat32) {  // reported: float32 (bfloat16 adds its own output rounding)
              worstRatio = std::max(worstRatio, err / b);
              worstError = std::max(worstError, err);
              worstBound = std::max(worstBound, b);
            }
          }
          if (!ranksAgree(comm, nranks, out, count * (type == ncclFloat32 ? 4 : 2))) {
            fprintf(stderr, "rank %d %s: ranks ended with different results\n", rank, named.name);
            ++bad;
          }
          failures += bad != 0;
        }
    if (rank == 0)
      fprintf(stderr, "[measured] %d ranks %-9s float32: max |error| %.3g, max bound %.3g, max error/bound %.3f\n",
              nranks, named.name, worstError, worstBound, worstRatio);
  }
  ncclCommDestroy(comm);
  return failures == 0 ? 0 : 3;
}

class CompressedRanks : public ::testing::TestWithParam<int> {};

TEST_P(CompressedRanks, EveryCodecWithinBound) {
  int nranks = GetParam();
  auto outcomes = runRankProcesses(
      nranks, [&](int rank, const ncclUniqueId& id) { return boundsBody(rank, nranks, id); }, 300);
  EXPECT_EQ(describeFailures(outcomes), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, CompressedRanks, ::testing::Values(2, 3, 4, 8));

// Repeated calls on the same gradient: with error feedback the results' sum plus every rank's
// residual equals the exact sums (so the accumulated error stays at the residual's size);
// without it the error of every call adds up.
int feedbackBody(int rank, int nranks, const ncclUniqueId& id) {
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) return 1;
  const size_t count = 4099;
  const int calls = 40;
  int failures = 0;
  for (const auto& named : allCompressors()) {
    auto x = inputs(nranks, count, ncclFloat32, 99);
    std::vector<double> exact(count, 0.0);
    for (int r = 0; r < nranks; ++r)
      for (size_t i = 0; i < count; ++i) exact[i] += x[r][i];
    double accumulated[2] = {0, 0};
    weftErrorFeedback_t state = nullptr;
    for (int withFeedback = 0; withFeedback < 2; ++withFeedback) {
      if (withFeedback && weftErrorFeedbackCreate(count, &state) != ncclSuccess) return 2;
      std::vector<double> sum(count, 0.0);
      std::vector<float> out(count);
      for (int t = 0; t < calls; ++t) {
        if (weftAllReduceCompressed(x[rank].data(), out.data(), count, ncclFloat32, ncclSum, &named.compressor,
                                    withFeedback ? state : nullptr, comm, nullptr) != ncclSuccess) {
          fprintf(stderr, "rank %d %s: %s\n", rank, named.name, ncclGetLastError(comm));
          return 3;
        }
        for (size_t i = 0; i < count; ++i) sum[i] += out[i];
      }
      // Root mean square over the elements of the accumulated error.
      double squares = 0.0, scale = 0.0;
      for (size_t i = 0; i < count; ++i) {
        squares += (sum[i] - calls * exact[i]) * (sum[i] - calls * exact[i]);
        scale = std::max(scale, std::fabs(calls * exact[i]));
      }
      accumulated[withFeedback] = std::sqrt(squares / count);
      if (withFeedback) {
        // sum of results + sum over ranks of the residuals == calls * exact, up to float rounding.
        const float* residual = nullptr;
        size_t n = 0;
        weftErrorFeedbackResidual(state, &residual, &n);
        std::vector<float> total(count);
        ncclAllReduce(residual, total.data(), count, ncclFloat32, ncclSum, comm, nullptr);
        double identity = 0.0;
        for (size_t i = 0; i < count; ++i)
          identity = std::max(identity, std::fabs(sum[i] + total[i] - calls * exact[i]));
        if (identity > scale * 1e-4) {
          fprintf(stderr, "rank %d %s: results + residuals differ from the exact sums by %.3g (scale %.3g)\n", rank,
                  named.name, identity, scale);
          ++failures;
        }
        weftErrorFeedbackDestroy(state);
      }
    }
    if (rank == 0)
      fprintf(stderr,
              "[measured] %d ranks %-9s accumulated error (rms) after %d calls: %.3g without, %.3g with feedback\n",
              nranks, named.name, calls, accumulated[0], accumulated[1]);
    // Lossy codecs: feedback must cut the accumulated error well down.
    if (accumulated[0] > 0 && !(accumulated[1] < accumulated[0] / 2)) {
      fprintf(stderr, "rank %d %s: error feedback did not reduce the accumulated error (%.3g vs %.3g)\n", rank,
              named.name, accumulated[1], accumulated[0]);
      ++failures;
    }
  }
  ncclCommDestroy(comm);
  return failures == 0 ? 0 : 4;
}

TEST(CompressedAllReduce, ErrorFeedbackBoundsAccumulatedError) {
  auto outcomes = runRankProcesses(
      3, [](int rank, const ncclUniqueId& id) { return feedbackBody(rank, 3, id); }, 300);
  EXPECT_EQ(describeFailures(outcomes), "");
}

// WEFT_COMPRESSION through the plain ncclAllReduce: eligible calls are compressed (within the
// bound, not exact), small, integer and non-sum calls stay exact, and ",ef" keeps a residual per
// buffer so repeated calls on one buffer average out.
int envBody(int rank, int nranks, const ncclUniqueId& id) {
  setenv("WEFT_COMPRESSION", "int8,ef,min_bytes=4096", 1);
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) {
    fprintf(stderr, "rank %d: init failed: %s\n", rank, ncclGetLastError(nullptr));
    return 1;
  }
  int failures = 0;
  // Large float sum: compressed.
  const size_t count = 20000;
  auto x = inputs(nranks, count, ncclFloat32, 5);
  std::vector<float> out(count);
  std::vector<float> grad = x[rank];
  if (ncclAllReduce(grad.data(), out.data(), count, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess) return 2;
  compression::CodecConfig int8;
  int8.kind = compression::CodecKind::kInt8;
  std::vector<double> bound = sumBound(x, int8, 0);
  size_t inexact = 0, outside = 0;
  std::vector<double> exact(count, 0.0);
  double firstError = 0.0;
  for (size_t i = 0; i < count; ++i) {
    for (int r = 0; r < nranks; ++r) exact[i] += x[r][i];
    double err = std::fabs(out[i] - exact[i]);
    firstError = std::max(firstError, err);
    inexact += err > std::fabs(exact[i]) * 1e-6;
    outside += err > bound[i];
  }
  if (inexact == 0 || outside != 0) {
    fprintf(stderr, "rank %d: env int8: %zu elements inexact (want > 0), %zu outside the bound (want 0)\n", rank,
            inexact, outside);
    ++failures;
  }
  // The same buffer again and again: its residual is fed back, the mean converges.
  std::vector<double> sum(out.begin(), out.end());
  const int calls = 12;
  for (int t = 1; t < calls; ++t) {
    if (ncclAllReduce(grad.data(), out.data(), count, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess) return 2;
    for (size_t i = 0; i < count; ++i) sum[i] += out[i];
  }
  double meanError = 0.0;
  for (size_t i = 0; i < count; ++i) meanError = std::max(meanError, std::fabs(sum[i] / calls - exact[i]));
  if (rank == 0)
    fprintf(stderr, "[measured] env int8,ef %d ranks: one call max |error| %.3g, mean of %d calls %.3g\n", nranks,
            firstError, calls, meanError);
  if (!(meanError < firstError / 3)) {
    fprintf(stderr, "rank %d: env error feedback: mean error %.3g not below %.3g / 3\n", rank, meanError, firstError);
    ++failures;
  }
  // Exact: below min_bytes, integers, max, and the in-place average is compressed but bounded.
  std::vector<float> small(512), smallOut(512);
  for (size_t i = 0; i < small.size(); ++i) small[i] = static_cast<float>((i * 7 + rank * 3) % 101) - 50.0f;
  if (ncclAllReduce(small.data(), smallOut.data(), small.size(), ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess)
    return 2;
  for (size_t i = 0; i < small.size(); ++i) {
    float want = 0;
    for (int r = 0; r < nranks; ++r) want += static_cast<float>((i * 7 + r * 3) % 101) - 50.0f;
    if (smallOut[i] != want) {
      fprintf(stderr, "rank %d: below min_bytes: [%zu] %g != %g\n", rank, i, smallOut[i], want);
      ++failures;
      break;
    }
  }
  std::vector<int32_t> ints(count), intsOut(count);
  for (size_t i = 0; i < count; ++i) ints[i] = static_cast<int32_t>(i % 1000) * (rank + 1);
  if (ncclAllReduce(ints.data(), intsOut.data(), count, ncclInt32, ncclSum, comm, nullptr) != ncclSuccess) return 2;
  for (size_t i = 0; i < count; ++i)
    if (intsOut[i] != static_cast<int32_t>(i % 1000) * nranks * (nranks + 1) / 2) {
      fprintf(stderr, "rank %d: int32 sum inexact at %zu\n", rank, i);
      ++failures;
      break;
    }
  std::vector<float> maxOut(count);
  if (ncclAllReduce(x[rank].data(), maxOut.data(), count, ncclFloat32, ncclMax, comm, nullptr) != ncclSuccess) return 2;
  for (size_t i = 0; i < count; ++i) {
    float want = x[0][i];
    for (int r = 1; r < nranks; ++r) want = std::max(want, x[r][i]);
    if (maxOut[i] != want) {
      fprintf(stderr, "rank %d: max inexact at %zu\n", rank, i);
      ++failures;
      break;
    }
  }
  std::vector<float> avg = inputs(nranks, count, ncclFloat32, 6)[rank];
  auto xa = inputs(nranks, count, ncclFloat32, 6);
  if (ncclAllReduce(avg.data(), avg.data(), count, ncclFloat32, ncclAvg, comm, nullptr) != ncclSuccess) return 2;
  std::vector<double> avgBound = sumBound(xa, int8, 0);
  for (size_t i = 0; i < count; ++i) {
    double want = 0;
    for (int r = 0; r < nranks; ++r) want += xa[r][i];
    want /= nranks;
    if (std::fabs(avg[i] - want) > avgBound[i] / nranks + std::fabs(want) * 1e-6) {
      fprintf(stderr, "rank %d: env avg [%zu] %g vs %g beyond the bound\n", rank, i, avg[i], want);
      ++failures;
      break;
    }
  }
  ncclCommDestroy(comm);
  return failures == 0 ? 0 : 3;
}

TEST(CompressedAllReduce, EnvironmentOptInThroughNcclAllReduce) {
  auto outcomes = runRankProcesses(
      3, [](int rank, const ncclUniqueId& id) { return envBody(rank, 3, id); }, 300);
  EXPECT_EQ(describeFailures(outcomes), "");
}

// top-k through the environment: the result is sparse (at most n * k non-zeros per slice).
TEST(CompressedAllReduce, EnvironmentTopKIsSparse) {
  auto outcomes = runRankProcesses(4, [](int rank, const ncclUniqueId& id) {
    setenv("WEFT_COMPRESSION", "topk:0.01", 1);
    ncclComm_t comm;
    if (ncclCommInitRank(&comm, 4, id, rank) != ncclSuccess) return 1;
    const size_t count = 50000;
    auto x = inputs(4, count, ncclFloat32, 11);
    std::vector<float> out(count);
    if (ncclAllReduce(x[rank].data(), out.data(), count, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess) return 2;
    size_t nonzero = 0;
    for (float v : out) nonzero += v != 0.0f;
    compression::CodecConfig topk;
    topk.kind = compression::CodecKind::kTopK;
    topk.topkRatio = 0.01;
    size_t slice = compressedSliceElements(topk, comm->net.sliceBytes);
    size_t limit = 0;
    for (size_t s = 0; s < count; s += slice) limit += 4 * compression::topkCount(topk, std::min(slice, count - s));
    ncclCommDestroy(comm);
    if (nonzero == 0 || nonzero > limit) {
      fprintf(stderr, "rank %d: %zu non-zeros, want 1..%zu\n", rank, nonzero, limit);
      return 3;
    }
    return 0;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST(CompressedAllReduce, BadEnvironmentValueFailsCreation) {
  for (const char* value : {"int9", "topk", "topk:0", "topk:1.5", "topk:x", "int8,eff", "int8,min_bytes=-3",
                            "int8,min_bytes=12kb", ",ef"}) {
    setenv("WEFT_COMPRESSION", value, 1);
    ncclComm_t comm = nullptr;
    ncclResult_t result = ncclCommInitAll(&comm, 1, nullptr);
    std::string error = ncclGetLastError(nullptr);
    unsetenv("WEFT_COMPRESSION");
    EXPECT_EQ(result, ncclInvalidArgument) << value;
    EXPECT_NE(error.find(std::string("WEFT_COMPRESSION=") + value), std::string::npos) << error;
    EXPECT_NE(error.find("fp16, bf16, int8, int4, sign or topk:RATIO"), std::string::npos) << error;
    EXPECT_NE(error.find(",ef"), std::string::npos) << error;
    EXPECT_NE(error.find(",min_bytes=N"), std::string::npos) << error;
    if (result == ncclSuccess) ncclCommDestroy(comm);
  }
}

TEST(CompressedAllReduce, ParsesValidForms) {
  CompressionConfig config;
  ASSERT_EQ(parseCompressionConfig("topk:0.01,ef,min_bytes=65536", &config), ncclSuccess);
  EXPECT_TRUE(config.enabled);
  EXPECT_EQ(config.codec.kind, compression::CodecKind::kTopK);
  EXPECT_DOUBLE_EQ(config.codec.topkRatio, 0.01);
  EXPECT_TRUE(config.errorFeedback);
  EXPECT_EQ(config.minBytes, 65536u);
  for (const char* name : {"fp16", "bf16", "int8", "int4", "sign"}) {
    ASSERT_EQ(parseCompressionConfig(name, &config), ncclSuccess) << name;
    EXPECT_TRUE(config.enabled);
    EXPECT_STREQ(compression::codecName(config.codec.kind), name);
    EXPECT_FALSE(config.errorFeedback);
  }
  ASSERT_EQ(parseCompressionConfig("off", &config), ncclSuccess);
  EXPECT_FALSE(config.enabled);
  ASSERT_EQ(parseCompressionConfig(nullptr, &config), ncclSuccess);
  EXPECT_FALSE(config.enabled);
}

TEST(CompressedAllReduce, RejectsBadArguments) {
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitAll(&comm, 1, nullptr), ncclSuccess);
  float buffer[64] = {};
  weftCompressor_t c = WEFT_COMPRESSOR_INITIALIZER;
  EXPECT_EQ(weftAllReduceCompressed(buffer, buffer, 64, ncclInt32, ncclSum, &c, nullptr, comm, nullptr),
            ncclInvalidArgument);
  EXPECT_EQ(weftAllReduceCompressed(buffer, buffer, 64, ncclFloat32, ncclMax, &c, nullptr, comm, nullptr),
            ncclInvalidArgument);
  EXPECT_EQ(weftAllReduceCompressed(buffer, buffer, 64, ncclFloat32, ncclSum, nullptr, nullptr, comm, nullptr),
            ncclInvalidArgument);
  weftErrorFeedback_t state = nullptr;
  ASSERT_EQ(weftErrorFeedbackCreate(32, &state), ncclSuccess);
  EXPECT_EQ(weftAllReduceCompressed(buffer, buffer, 64, ncclFloat32, ncclSum, &c, state, comm, nullptr),
            ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("32"), std::string::npos);
  // One rank: exact.
  for (int i = 0; i < 64; ++i) buffer[i] = 0.1f * i;
  EXPECT_EQ(weftAllReduceCompressed(buffer, buffer, 64, ncclFloat32, ncclSum, &c, nullptr, comm, nullptr), ncclSuccess);
  EXPECT_FLOAT_EQ(buffer[10], 1.0f);
  weftErrorFeedbackDestroy(state);
  ncclCommDestroy(comm);
}

}  // namespace
