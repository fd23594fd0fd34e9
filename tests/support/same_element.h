// Comparing reduction results element by element, as the CPU and CUDA kernel tests do.
#pragma once

#include <cmath>
#include <cstring>

#include "common/dtype.h"
#include "common/numeric.h"
#include "nccl.h"

namespace weft::testing {

// The same bytes, or both NaN: which NaN's payload a sum or product of two NaNs keeps depends
// on operand order, which compilers may swap, and GPUs return their canonical NaN.
inline bool sameElement(const void* x, const void* y, ncclDataType_t type) {
  if (std::memcmp(x, y, dataTypeSize(type)) == 0) return true;
  return isFloatingType(type) && std::isnan(toDouble(x, type)) && std::isnan(toDouble(y, type));
}

}  // namespace weft::testing
