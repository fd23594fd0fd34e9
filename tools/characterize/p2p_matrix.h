// Point-to-point latency and bandwidth between every ordered pair of ranks, one pair at a time
// (pairs measured together would share links and hide a slow one), with ncclSend/ncclRecv on
// the world communicator.
//
// For each size S the sender times a ping-pong of S bytes out and 8 bytes back; the one-way
// time is that round trip less half an 8-byte round trip, so t(S) = alpha + S/B is the cost
// model's form and t(8) is the latency. The median of the iterations is kept: a shared VM
// stalls single ones.
#pragma once

#include <string>
#include <vector>

#include "tools/characterize/host_survey.h"
#include "tools/characterize/rank_exchange.h"
#include "tools/characterize/run_control.h"

namespace weft::characterize {

struct P2pMatrix {
  std::vector<size_t> sizes;  // sizes[0] == 8
  int nranks = 0;
  // oneWayUs[(from * nranks + to) * sizes.size() + k]; 0 where not measured (stopped)
  std::vector<double> oneWayUs;
  double at(int from, int to, size_t k) const {
    return oneWayUs[(static_cast<size_t>(from) * nranks + to) * sizes.size() + k];
  }
  // GB/s of the largest size from `from` to `to` (0 when not measured).
  double bandwidthGBps(int from, int to) const {
    const double us = at(from, to, sizes.size() - 1);
    return us > 0 ? static_cast<double>(sizes.back()) / (us * 1e3) : 0.0;
  }
};

// The sizes measured: 8 B, 64 KiB, 1 MiB and maxBytes (those below it).
std::vector<size_t> p2pSizes(size_t maxBytes);

// Collective over the world communicator; stops early (leaving zeros) when control says so.
P2pMatrix measureP2pMatrix(RankExchange* exchange, RunControl* control, size_t maxBytes);

// Predicted seconds for the whole matrix, from an assumed latency and bandwidth.
double estimateP2pSeconds(int nranks, size_t maxBytes, double latencyUs, double bandwidthGBps);

// The document's "p2p" object (rank 0).
std::string p2pJson(const P2pMatrix& matrix, const std::vector<RankSite>& sites);

// The slowest measured pair's latency (us) and bandwidth (GB/s) at the largest size: what the
// budget's estimates assume. Defaults when nothing was measured.
void slowestPair(const P2pMatrix& matrix, double* latencyUs, double* bandwidthGBps);

}  // namespace weft::characterize
