// Data for the perf tools' correctness check (-c 1): the value each rank puts at each index,
// the expected result computed independently in double precision, and conversion of every
// NCCL datatype to and from double. Pure functions; no communication.
//
// Inputs are small integers (or +-1/2 factors for prod) chosen per datatype so that every
// partial result of a sum, product, min or max over up to 64 ranks, in any order, is exactly
// representable in the datatype, including int8, half, bfloat16 and both fp8 formats. The
// check is therefore exact for integer types and within one rounding for float types (avg
// divides, so its floating-point result gets a tolerance derived from the inputs).
#ifndef WEFT_PERF_PERF_DATA_H_
#define WEFT_PERF_PERF_DATA_H_

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace weft::perf {

struct TypeInfo {
  ncclDataType_t type;
  const char* name;  // nccl-tests' name: int8 uint8 int32 uint32 int64 uint64 half float double
                     // bfloat16 f8e4m3 f8e5m2
  size_t size;       // bytes per element
  bool isFloat;
  bool isSigned;
  double exactMax;  // inputs and partial results stay within [-exactMax, exactMax]
  int maxPow2;      // products stay within 2^maxPow2
  double eps;       // spacing of the format at 1.0 (0 for integers)
  double minSubnormal;
};

const TypeInfo& typeInfo(ncclDataType_t type);
size_t typeSize(ncclDataType_t type);
const char* typeName(ncclDataType_t type);
const char* opName(ncclRedOp_t op);  // sum prod max min avg

// Small binary floating-point formats (half, bfloat16, fp8), encoded with round-to-nearest-even.
struct MiniFloatFormat {
  int expBits;
  int manBits;
  int bias;
  bool ieeeSpecials;  // all-ones exponent means inf/NaN (false: e4m3 "fn", only S.1111.111 is NaN)
};
extern const MiniFloatFormat kHalfFormat, kBfloat16Format, kE4m3Format, kE5m2Format;
uint32_t encodeMiniFloat(double value, const MiniFloatFormat& format);  // overflow: inf / saturate
double decodeMiniFloat(uint32_t bits, const MiniFloatFormat& format);

// Element i of a buffer of `type`, as double, and back (integers: rounded to nearest).
double loadElement(const void* buffer, size_t index, ncclDataType_t type);
void storeElement(void* buffer, size_t index, ncclDataType_t type, double value);
// The value after a round trip through `type`.
double roundToType(double value, ncclDataType_t type);

// Fills count elements with a pattern that no check ever expects (NaN for float types, the
// most negative value for signed and the largest for unsigned integers).
void poisonBuffer(void* buffer, size_t count, ncclDataType_t type);
// Fills count elements with N(0, 1) values drawn from `seed` (-D normal), rounded to `type`.
void fillNormal(void* buffer, size_t count, ncclDataType_t type, uint64_t seed);

constexpr int kNoOp = -1;  // data for collectives that do not reduce (copies only)

struct ExpectedValue {
  double value;
  double tolerance;  // |result - value| <= tolerance passes
};

// The input pattern of one test: datatype, reduction (or kNoOp), rank count and a seed that
// changes the values between tests so stale results are caught.
class DataGen {
 public:
  DataGen(ncclDataType_t type, int op, int nranks, uint64_t seed);

  // The value rank `rank` holds at element `index` of its send buffer.
  double input(int rank, size_t index) const;
  // op applied over input(0..nranks-1, index), in double (avg: sum / nranks).
  ExpectedValue reduced(size_t index) const;
  // A single rank's value passed through unchanged (copy collectives).
  ExpectedValue copied(int rank, size_t index) const { return {input(rank, index), 0.0}; }
  bool matches(double got, const ExpectedValue& want) const;

  // Writes input(rank, firstIndex + k) to element k, for k < count.
  void fill(void* buffer, size_t count, int rank, size_t firstIndex = 0) const;

  ncclDataType_t type() const { return type_; }
  int op() const { return op_; }
  int nranks() const { return nranks_; }

 private:
  enum class Scheme { kSum, kAvgPairs, kProd, kRange };
  uint64_t hash(int rank, size_t index) const;
  ncclDataType_t type_;
  int op_;
  int nranks_;
  uint64_t seed_;
  const TypeInfo* info_;
  Scheme scheme_;
  int64_t stride_ = 1;  // sum/prod: only ranks with (rank + index) % stride == 0 contribute
  int64_t bound_ = 1;   // |input| <= bound_
};

}  // namespace weft::perf

#endif  // WEFT_PERF_PERF_DATA_H_
