// Point-to-point (ncclSend/ncclRecv, usually several inside one group) as one schedule.
//
// Every op names a byte range: a send reads Send[offset, offset+bytes), a receive writes
// Recv[offset, offset+bytes). The runtime may pass buffer bases of 0 and each op's pointer as
// its offset (host memory), or pack ops into staging buffers; either way the schedule's ranges
// are exact, so hazards between ops on overlapping memory are seen.
//
// All sends come first, then all receives, each in the order given: ops to one peer in one
// direction keep their order (NCCL matches them in order), and no pair of ranks can wait on
// each other as long as the transport buffers sends. Sends to oneself are matched in order
// with receives from oneself and become local Copies.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "algorithms/schedule.h"

namespace weft {

struct PointToPointOp {
  int peer = 0;
  size_t bytes = 0;
  bool send = true;   // true: send to peer; false: receive from peer
  size_t offset = 0;  // into Send (for a send) or Recv (for a receive)
};

struct PointToPointParams {
  int rank = 0;
  std::vector<PointToPointOp> ops;  // in the order the user called them
};

// Fails (returns false, *error says why) when sends to self and receives from self do not pair
// up with equal sizes.
bool buildPointToPoint(const PointToPointParams& params, Schedule* schedule, std::string* error);

}  // namespace weft
