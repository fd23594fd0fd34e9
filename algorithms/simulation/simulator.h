// The simulator: runs the schedules of every rank of a communicator in one process, with real
// data and real reductions (common/reduce.h), so a builder can be proven correct for many rank
// counts in milliseconds.
//
// Each rank runs its steps in order; ranks take turns (round robin), each running until it must
// wait for a message. Messages go through one FIFO queue per (source, destination) pair, data and
// fences (Notify/WaitNotify, empty messages) alike, which is what a transport connection does.
// A step with no bytes (other than a fence) does nothing, as in the executor. Queues are
// unbounded: a send never waits. The run fails, with a message naming the ranks, steps and peers,
// on a deadlock (no rank can move, not all done), a message left unconsumed, a size mismatch, a
// range outside its buffer, or a step that reads and writes partially overlapping memory.
//
// Buffers are the caller's real pointers, so in-place aliasing (send == recv, or one inside the
// other at an offset) is exactly what the runtime sees. The executor runs steps out of order
// where their named ranges do not conflict, after treating Send as Recv when the two pointers are
// equal; the simulator checks that every real memory conflict between two steps is visible that
// way (or ordered by a fence or a shared channel), so an in-order result carries over.
//
// Timing: a LinkModel prices messages and local steps; each rank has a clock. A received message
// is available at arrivalTime(sender's clock when sent) (by default that clock + transferTime);
// local steps add localTime. The default model costs nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "common/reduce.h"
#include "nccl.h"

namespace weft {

class LinkModel {
 public:
  virtual ~LinkModel() = default;
  // Seconds from the start of a send to its data being available at dst.
  virtual double transferTime(int src, int dst, size_t bytes) const {
    (void)src, (void)dst, (void)bytes;
    return 0.0;
  }
  // When the data of a send that starts at `start` (the sender's clock, seconds) is available at
  // dst. The default is start + transferTime; a model with per-link state (contention, e.g.
  // algorithms/simulation/link_model_simulation.h) overrides this instead. The simulator calls it once per
  // message, in the order it runs the sends (round robin over ranks), not in time order.
  virtual double arrivalTime(int src, int dst, size_t bytes, double start) const {
    return start + transferTime(src, dst, bytes);
  }
  // Seconds for a local step (copy, reduce, scale, divide) over `bytes` on `rank`.
  virtual double localTime(int rank, StepKind kind, size_t bytes) const {
    (void)rank, (void)kind, (void)bytes;
    return 0.0;
  }
};

struct SimulatedBuffers {
  const char* send = nullptr;
  char* recv = nullptr;
  size_t sendBytes = 0;
  size_t recvBytes = 0;
  // Null: the simulator allocates schedule.scratchBytes (filled with a junk pattern).
  char* scratch = nullptr;
  size_t scratchBytes = 0;
};

struct SimulationOptions {
  ncclDataType_t type = ncclFloat32;
  ReduceOp op = ReduceOp::Sum;
  // Per rank, one element of `type` for Scale steps (PreMulSum); empty when no step scales.
  std::vector<std::vector<char>> scalars;
  const LinkModel* links = nullptr;  // null: every step costs nothing
  bool checkHazards = true;          // see above; costs O(steps^2) on ranks whose buffers alias at an offset
  // Steps a rank runs per turn before the next rank's turn; 0: until it must wait. The result is
  // the same either way; a link model with contention (link_model_simulation.h) prices
  // transfers in the order they are sent, so 1 interleaves concurrent senders more fairly.
  size_t stepsPerTurn = 0;
};

struct SimulationResult {
  bool ok = false;
  std::string error;               // empty when ok
  std::vector<double> finishTime;  // per rank, from the link model
  double time = 0.0;               // the largest finishTime
  size_t messages = 0;             // fences included
  size_t bytesMoved = 0;
};

// schedules[r] and buffers[r] are rank r's.
SimulationResult simulate(const std::vector<Schedule>& schedules, const std::vector<SimulatedBuffers>& buffers,
                          const SimulationOptions& options = {});

}  // namespace weft
