// One collective call as the runtime sees it after argument checks, and the function that
// runs a batch of them (a single call, or everything queued in a group) to completion.
#pragma once

#include <cstddef>
#include <vector>

#include "nccl.h"

namespace weft {

enum class CollectiveKind { AllReduce };

struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::AllReduce;
  ncclComm* comm = nullptr;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;
  ncclDataType_t datatype = ncclFloat32;
  ncclRedOp_t op = ncclSum;
};

const char* collectiveName(CollectiveKind kind);

// Runs the calls; calls on one communicator run in order, calls on different communicators
// progress together (so one thread can drive every rank of ncclCommInitAll).
ncclResult_t runCollectives(const std::vector<CollectiveCall>& calls);

}  // namespace weft
