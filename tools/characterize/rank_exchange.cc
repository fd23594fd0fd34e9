#include "tools/characterize/rank_exchange.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace weft::characterize {

void checkNccl(ncclResult_t r, ncclComm_t comm, const char* what) {
  if (r == ncclSuccess) return;
  const char* last = ncclGetLastError(comm);
  throw std::runtime_error(std::string(what) + " failed: " + ncclGetErrorString(r) +
                           (last && *last ? std::string(" ('") + last + "')" : ""));
}

RankExchange::RankExchange(ncclComm_t comm) : comm_(comm) {
  checkNccl(ncclCommCount(comm, &nranks_), comm, "ncclCommCount");
  checkNccl(ncclCommUserRank(comm, &rank_), comm, "ncclCommUserRank");
}

void RankExchange::barrier() { anyRank(false); }

bool RankExchange::anyRank(bool mine) {
  int32_t in = mine ? 1 : 0, out = 0;
  checkNccl(ncclAllReduce(&in, &out, 1, ncclInt32, ncclMax, comm_, nullptr), comm_, "ncclAllReduce(flag)");
  return out != 0;
}

double RankExchange::maxOverRanks(double mine) {
  double out = 0;
  checkNccl(ncclAllReduce(&mine, &out, 1, ncclFloat64, ncclMax, comm_, nullptr), comm_, "ncclAllReduce(max)");
  return out;
}

std::vector<std::string> RankExchange::allTexts(const std::string& mine, size_t slotBytes) {
  if (mine.size() >= slotBytes)
    throw std::runtime_error("rank " + std::to_string(rank_) + "'s record is " + std::to_string(mine.size()) +
                             " bytes, above the slot of " + std::to_string(slotBytes));
  std::vector<char> slot(slotBytes, 0), all(slotBytes * static_cast<size_t>(nranks_), 0);
  std::memcpy(slot.data(), mine.data(), mine.size());
  checkNccl(ncclAllGather(slot.data(), all.data(), slotBytes, ncclUint8, comm_, nullptr), comm_,
            "ncclAllGather(records)");
  std::vector<std::string> texts;
  for (int r = 0; r < nranks_; ++r) texts.emplace_back(all.data() + slotBytes * static_cast<size_t>(r));
  return texts;
}

std::string RankExchange::fromRankZero(const std::string& text, size_t maxBytes) {
  uint64_t size = rank_ == 0 ? text.size() : 0;
  if (size > maxBytes) throw std::runtime_error("rank 0's text is above " + std::to_string(maxBytes) + " bytes");
  checkNccl(ncclBroadcast(&size, &size, 1, ncclUint64, 0, comm_, nullptr), comm_, "ncclBroadcast(size)");
  std::string out(size, '\0');
  if (rank_ == 0) out = text;
  if (size)
    checkNccl(ncclBroadcast(out.data(), out.data(), size, ncclUint8, 0, comm_, nullptr), comm_, "ncclBroadcast(text)");
  return out;
}

void RankExchange::sumOverRanks(std::vector<double>* values) {
  if (values->empty()) return;
  checkNccl(ncclAllReduce(values->data(), values->data(), values->size(), ncclFloat64, ncclSum, comm_, nullptr), comm_,
            "ncclAllReduce(sum)");
}

}  // namespace weft::characterize
