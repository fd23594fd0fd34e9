// Independent references for collective results: inputs that are exactly representable in
// every type, and the expected value computed in double (integers with the type's wrap-around).
#pragma once

#include <cstddef>
#include <vector>

#include "nccl.h"

namespace weft::testing {

// Every NCCL data type and every built-in reduction operator, for test grids.
inline constexpr ncclDataType_t kAllTypes[] = {ncclInt8,    ncclUint8,    ncclInt32,      ncclUint32,
                                               ncclInt64,   ncclUint64,   ncclFloat16,    ncclFloat32,
                                               ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};
inline constexpr ncclRedOp_t kAllOps[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};

// The value rank `rank` contributes at element `index` for operator `op`: small integers
// (and, for products, mostly +-1) so that sums and products are exact in every type.
double inputValue(int rank, size_t index, ncclDataType_t type, ncclRedOp_t op, unsigned seed);

// Expected result of reducing inputValue over `nranks` ranks, in double.
double expectedReduction(int nranks, size_t index, ncclDataType_t type, ncclRedOp_t op, unsigned seed);

// Allowed |actual - expected| for a result reduced over `nranks` ranks (0 for exact types).
double tolerance(double expected, int nranks, ncclDataType_t type);

// Fills a typed buffer with inputValue for `rank`.
void fillInput(void* buffer, size_t count, int rank, ncclDataType_t type, ncclRedOp_t op, unsigned seed);

// Number of elements of `result` that differ from expectedReduction beyond tolerance; prints the first few.
size_t countMismatches(const void* result, size_t count, int nranks, ncclDataType_t type, ncclRedOp_t op, unsigned seed,
                       const char* label);

}  // namespace weft::testing
