#include "common/dtype.h"

namespace weft {

namespace {

struct TypeInfo {
  size_t size;
  const char* name;
  bool floating;
};

// Indexed by ncclDataType_t.
constexpr TypeInfo kTypes[ncclNumTypes] = {
    {1, "int8", false},  {1, "uint8", false},   {4, "int32", false}, {4, "uint32", false},
    {8, "int64", false}, {8, "uint64", false},  {2, "half", true},   {4, "float", true},
    {8, "double", true}, {2, "bfloat16", true}, {1, "f8e4m3", true}, {1, "f8e5m2", true},
};

}  // namespace

bool isValidDataType(int value) { return value >= 0 && value < ncclNumTypes; }

size_t dataTypeSize(ncclDataType_t type) { return isValidDataType(type) ? kTypes[type].size : 0; }

const char* dataTypeName(ncclDataType_t type) { return isValidDataType(type) ? kTypes[type].name : "invalid"; }

bool isFloatingType(ncclDataType_t type) { return isValidDataType(type) && kTypes[type].floating; }

const char* redOpName(ncclRedOp_t op) {
  switch (op) {
    case ncclSum: return "sum";
    case ncclProd: return "prod";
    case ncclMax: return "max";
    case ncclMin: return "min";
    case ncclAvg: return "avg";
    default: return static_cast<int>(op) >= ncclNumOps ? "premulsum" : "invalid";
  }
}

}  // namespace weft
