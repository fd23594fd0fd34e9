#include "algorithms/builders/point_to_point.h"

#include <string>

namespace weft {

bool buildPointToPoint(const PointToPointParams& p, Schedule* schedule, std::string* error) {
  *schedule = Schedule{};
  std::vector<const PointToPointOp*> selfSends, selfRecvs;
  for (const PointToPointOp& op : p.ops) {
    if (op.peer == p.rank) {
      (op.send ? selfSends : selfRecvs).push_back(&op);
      continue;
    }
    if (op.send && op.bytes)
      schedule->steps.push_back({StepKind::Send, op.peer, {BufferKind::Send, op.offset, op.bytes}, {}, {}});
  }
  if (selfSends.size() != selfRecvs.size()) {
    *error = std::to_string(selfSends.size()) + " send(s) to self but " + std::to_string(selfRecvs.size()) +
             " receive(s) from self";
    return false;
  }
  for (size_t i = 0; i < selfSends.size(); ++i) {
    if (selfSends[i]->bytes != selfRecvs[i]->bytes) {
      *error = "send to self #" + std::to_string(i) + " has " + std::to_string(selfSends[i]->bytes) +
               " bytes, the matching receive " + std::to_string(selfRecvs[i]->bytes);
      return false;
    }
    if (selfSends[i]->bytes)
      schedule->steps.push_back({StepKind::Copy,
                                 -1,
                                 {BufferKind::Send, selfSends[i]->offset, selfSends[i]->bytes},
                                 {BufferKind::Recv, selfRecvs[i]->offset, selfRecvs[i]->bytes},
                                 {}});
  }
  for (const PointToPointOp& op : p.ops)
    if (!op.send && op.peer != p.rank && op.bytes)
      schedule->steps.push_back({StepKind::Recv, op.peer, {}, {BufferKind::Recv, op.offset, op.bytes}, {}});
  return true;
}

}  // namespace weft
