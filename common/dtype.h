// Facts about NCCL's data types and reduction operators: sizes, validity and the names that
// nccl-tests prints, so every tool and log line spells them the same way.
#pragma once

#include <cstddef>

#include "nccl.h"

namespace weft {

// Bytes per element; 0 for a value outside ncclDataType_t.
size_t dataTypeSize(ncclDataType_t type);
// True for 0 <= value < ncclNumTypes (an int, because it validates what callers passed in).
bool isValidDataType(int value);
// nccl-tests' names: int8 uint8 int32 uint32 int64 uint64 half float double bfloat16
// f8e4m3 f8e5m2; "invalid" otherwise.
const char* dataTypeName(ncclDataType_t type);
// half, float, double, bfloat16 and both fp8 formats.
bool isFloatingType(ncclDataType_t type);
// sum prod max min avg; "premulsum" for the user-created operators (>= ncclNumOps).
const char* redOpName(ncclRedOp_t op);

}  // namespace weft
