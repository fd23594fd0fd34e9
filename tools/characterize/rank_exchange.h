// The small exchanges weft-characterize makes between its ranks on the world communicator:
// a barrier, an agreed flag, every rank's text, rank 0's text. Failures throw
// std::runtime_error with the call and weft's message.
#pragma once

#include <string>
#include <vector>

#include "nccl.h"

namespace weft::characterize {

class RankExchange {
 public:
  explicit RankExchange(ncclComm_t comm);
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  ncclComm_t comm() const { return comm_; }

  void barrier();
  // True on every rank when `mine` is true on any rank.
  bool anyRank(bool mine);
  double maxOverRanks(double mine);
  // Every rank's `mine` (at most slotBytes - 1 bytes; longer text is an error), in rank order.
  std::vector<std::string> allTexts(const std::string& mine, size_t slotBytes = 4096);
  // Rank 0's `text` on every rank.
  std::string fromRankZero(const std::string& text, size_t maxBytes = 1 << 16);
  // Element-wise sum over ranks of `values` (every rank passes the same length).
  void sumOverRanks(std::vector<double>* values);

 private:
  ncclComm_t comm_;
  int rank_ = 0, nranks_ = 1;
};

// Throws std::runtime_error naming `what` when r is not ncclSuccess.
void checkNccl(ncclResult_t r, ncclComm_t comm, const char* what);

}  // namespace weft::characterize
