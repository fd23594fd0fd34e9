// What a test of device-memory collectives does with a device, as a CUDA program would:
// allocate, make streams, write inputs and read results in stream order. Two implementations:
// the CPU one over weft's CpuDevice (installed as the process's device API, so that the suite
// runs the stream-ordered path without a GPU), and the CUDA one (tests/gpu), on a real device.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nccl.h"
#include "runtime/device/cpu_device.h"

namespace weft::testing {

class TestDevice {
 public:
  virtual ~TestDevice() = default;
  virtual const char* name() const = 0;
  virtual void* allocate(size_t bytes) = 0;  // zero-filled device memory
  virtual void release(void* pointer) = 0;
  virtual cudaStream_t createStream() = 0;
  virtual void destroyStream(cudaStream_t stream) = 0;
  virtual void synchronize(cudaStream_t stream) = 0;
  // In stream order: host bytes (taken now) into device memory; device memory into host memory
  // (valid after synchronize); device to device.
  virtual void write(cudaStream_t stream, void* device, std::vector<char> bytes) = 0;
  virtual void read(cudaStream_t stream, void* host, const void* device, size_t bytes) = 0;
  virtual void copy(cudaStream_t stream, void* dst, const void* src, size_t bytes) = 0;
};

// The CPU device, installed as weft's device API for the object's lifetime.
class CpuTestDevice : public TestDevice {
 public:
  CpuTestDevice() { installDeviceApi(&device_); }
  ~CpuTestDevice() override { installDeviceApi(nullptr); }
  const char* name() const override { return "cpu"; }
  void* allocate(size_t bytes) override {
    void* pointer = nullptr;
    const ncclResult_t r =
        plain_ ? device_.allocatePlainDevice(bytes, &pointer) : device_.allocateDevice(bytes, &pointer);
    return r == ncclSuccess ? pointer : nullptr;
  }
  // Later allocations are cudaMalloc-like (CpuDevice::allocatePlainDevice: not exportable), or
  // ncclMemAlloc-like (the default).
  void allocatePlain(bool plain) { plain_ = plain; }
  void release(void* pointer) override { device_.freeDevice(pointer); }
  cudaStream_t createStream() override { return device_.createStream(); }
  void destroyStream(cudaStream_t stream) override { device_.destroyStream(stream); }
  void synchronize(cudaStream_t stream) override { device_.synchronize(stream); }
  void write(cudaStream_t stream, void* device, std::vector<char> bytes) override;
  void read(cudaStream_t stream, void* host, const void* device, size_t bytes) override;
  void copy(cudaStream_t stream, void* dst, const void* src, size_t bytes) override;
  CpuDevice& cpu() { return device_; }

 private:
  CpuDevice device_;
  bool plain_ = false;
};

// A rank's view of the stream-ordered calls it made: inputs written in stream order before each
// call, each result read by a copy queued right after its call, all compared with the reference
// once the streams are synchronized; so a call that read its input too early or wrote its
// output too late gives a wrong value.
class StreamChecks {
 public:
  StreamChecks(TestDevice& device, int rank) : device_(device), rank_(rank) {}
  StreamChecks(StreamChecks&&) = default;  // the moved-from object frees nothing
  StreamChecks(const StreamChecks&) = delete;
  ~StreamChecks();

  // Device memory holding rank `owner`'s input (this rank's when -1), written on `stream`.
  char* input(cudaStream_t stream, size_t count, ncclDataType_t type, ncclRedOp_t op, unsigned seed, int owner = -1);
  char* deviceBuffer(size_t bytes);
  // Reads `count` elements at `result` on `stream`, to be checked against expected(i), the
  // result of `op` over `reducedRanks` ranks.
  void expect(cudaStream_t stream, const char* result, size_t count, ncclDataType_t type,
              std::function<double(size_t)> expected, int reducedRanks, ncclRedOp_t op, std::string label);
  // Mismatching elements over every read (the streams must have been synchronized).
  size_t mismatches() const;

 private:
  struct Pending {
    std::unique_ptr<std::vector<char>> snapshot;
    size_t count;
    ncclDataType_t type;
    std::function<double(size_t)> expected;
    int reducedRanks;
    ncclRedOp_t op;
    std::string label;
  };
  TestDevice& device_;
  int rank_;
  std::vector<void*> allocations_;
  std::vector<Pending> pending_;
};

// Ranks of one process (ncclCommInitAll) on the CPU device, each with its own stream; `ok` says
// whether the communicators were made. `plain`: device buffers cudaMalloc-like (allocatePlain).
struct OneProcessRanks {
  CpuTestDevice cpu;
  int n;
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  bool ok = false;
  explicit OneProcessRanks(int nranks, bool plain = false) : n(nranks), comms(nranks), streams(nranks) {
    cpu.allocatePlain(plain);
    ok = ncclCommInitAll(comms.data(), n, nullptr) == ncclSuccess;
    for (auto& s : streams) s = cpu.createStream();
  }
  ~OneProcessRanks() {
    for (ncclComm_t c : comms)
      if (c) ncclCommDestroy(c);
    for (auto s : streams) cpu.destroyStream(s);
  }
  CpuDevice& device() { return cpu.cpu(); }
  // One StreamChecks per rank (declared after this object, so that its buffers go first).
  std::vector<StreamChecks> checksPerRank() {
    std::vector<StreamChecks> checks;
    for (int r = 0; r < n; ++r) checks.emplace_back(cpu, r);
    return checks;
  }
};

// Every collective and a ring of sends and receives, for every type, three counts and both
// placements, on device buffers, alternating between two streams without synchronizing; then
// one synchronization and every result checked (each read in stream order right after its
// call) against the reference. Returns the number of wrong elements (1000+ when a call failed).
size_t runStreamOrderedGrid(TestDevice& device, int rank, int nranks, const ncclUniqueId& id);

}  // namespace weft::testing
