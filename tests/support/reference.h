// Independent references for collective results: inputs that are exactly representable in
// every type, and the expected value computed in double (integers with the type's wrap-around).
// Results are compared exactly wherever the arithmetic is exact (integers, copies, Max, Min,
// Prod, sums whose partial sums the type represents); only rounding the type must do gets a
// tolerance, derived from the number of roundings and the type's precision. A NaN or an
// infinity never matches a finite expectation.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "nccl.h"

namespace weft::testing {

// Every NCCL data type and every built-in reduction operator, for test grids.
inline constexpr ncclDataType_t kAllTypes[] = {ncclInt8,    ncclUint8,    ncclInt32,      ncclUint32,
                                               ncclInt64,   ncclUint64,   ncclFloat16,    ncclFloat32,
                                               ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};
inline constexpr ncclRedOp_t kAllOps[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};

// The largest |inputValue| for `type` and `op`: small enough that up to 8 ranks' sums are exact
// even in fp8 (e5m2 represents the integers up to 8, e4m3 up to 16).
double maxInputMagnitude(ncclDataType_t type, ncclRedOp_t op);

// The largest integer below which every integer is exact in `type` (2^(fraction bits + 1));
// 0 for integer types (exact with wrap-around).
double exactIntegerLimit(ncclDataType_t type);

// The value rank `rank` contributes at element `index` for operator `op`: small integers
// (and, for products, mostly +-1) so that sums and products are exact in every type.
double inputValue(int rank, size_t index, ncclDataType_t type, ncclRedOp_t op, unsigned seed);

// Expected result of reducing inputValue over `nranks` ranks, in double (exact: integer average
// truncates toward zero as NCCL's does; a floating average is the exact quotient).
double expectedReduction(int nranks, size_t index, ncclDataType_t type, ncclRedOp_t op, unsigned seed);

// Allowed |actual - expected| for `op` over `nranks` ranks of inputValue (a copy is a Sum over
// one rank): 0 wherever the arithmetic is exact.
double tolerance(double expected, int nranks, ncclDataType_t type, ncclRedOp_t op);

// `actual` is within `allowed` of `expected`; NaN matches only NaN, an infinity only itself.
bool matches(double actual, double expected, double allowed);

// Fills a typed buffer with inputValue for `rank`.
void fillInput(void* buffer, size_t count, int rank, ncclDataType_t type, ncclRedOp_t op, unsigned seed);

// Number of elements of `result` that do not match expectedReduction; prints the first few.
size_t countMismatches(const void* result, size_t count, int nranks, ncclDataType_t type, ncclRedOp_t op, unsigned seed,
                       const char* label);

// The same against expected(i), the result of `op` over `nranks` ranks (a copy of one rank's
// input is a Sum over one rank: exact).
size_t countMismatchesAgainst(const void* result, size_t count, ncclDataType_t type,
                              const std::function<double(size_t)>& expected, int nranks, ncclRedOp_t op,
                              const char* label);

}  // namespace weft::testing
