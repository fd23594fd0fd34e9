#include "common/numeric.h"

#include <bit>
#include <cmath>
#include <cstring>

namespace weft {

namespace {

template <class T>
T load(const void* element) {
  T value;
  std::memcpy(&value, element, sizeof(T));
  return value;
}

template <class T>
void store(T value, void* element) {
  std::memcpy(element, &value, sizeof(T));
}

// C-cast semantics without the undefined behaviour of casting an out-of-range double: the
// integer part modulo 2^64 (NaN and infinities give 0).
uint64_t wrapToUint64(double value) {
  if (!std::isfinite(value)) return 0;
  double m = std::fmod(std::trunc(value), 0x1p64);  // exact, in (-2^64, 2^64)
  return m < 0 ? 0 - static_cast<uint64_t>(-m) : static_cast<uint64_t>(m);
}

}  // namespace

float doubleToFloatRoundToOdd(double value) {
  float f = static_cast<float>(value);
  if (std::isnan(value) || static_cast<double>(f) == value) return f;
  // Inexact: step to the neighbour below in magnitude (truncation), then force the last bit.
  if (std::fabs(static_cast<double>(f)) > std::fabs(value)) f = std::nextafter(f, 0.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
}

double toDouble(const void* element, ncclDataType_t type) {
  switch (type) {
    case ncclInt8: return load<int8_t>(element);
    case ncclUint8: return load<uint8_t>(element);
    case ncclInt32: return load<int32_t>(element);
    case ncclUint32: return load<uint32_t>(element);
    case ncclInt64: return static_cast<double>(load<int64_t>(element));
    case ncclUint64: return static_cast<double>(load<uint64_t>(element));
    case ncclFloat16: return halfToFloat(load<uint16_t>(element));
    case ncclFloat32: return load<float>(element);
    case ncclFloat64: return load<double>(element);
    case ncclBfloat16: return bfloat16ToFloat(load<uint16_t>(element));
    case ncclFloat8e4m3: return fp8e4m3ToFloat(load<uint8_t>(element));
    case ncclFloat8e5m2: return fp8e5m2ToFloat(load<uint8_t>(element));
    default: return 0.0;
  }
}

void fromDouble(double value, void* element, ncclDataType_t type) {
  uint64_t wrapped = wrapToUint64(value);
  switch (type) {
    case ncclInt8:
    case ncclUint8: store(static_cast<uint8_t>(wrapped), element); break;
    case ncclInt32:
    case ncclUint32: store(static_cast<uint32_t>(wrapped), element); break;
    case ncclInt64:
    case ncclUint64: store(wrapped, element); break;
    case ncclFloat16: store(floatToHalf(doubleToFloatRoundToOdd(value)), element); break;
    case ncclFloat32: store(static_cast<float>(value), element); break;
    case ncclFloat64: store(value, element); break;
    case ncclBfloat16: store(floatToBfloat16(doubleToFloatRoundToOdd(value)), element); break;
    case ncclFloat8e4m3: store(floatToFp8e4m3(doubleToFloatRoundToOdd(value)), element); break;
    case ncclFloat8e5m2: store(floatToFp8e5m2(doubleToFloatRoundToOdd(value)), element); break;
    default: break;
  }
}

}  // namespace weft
