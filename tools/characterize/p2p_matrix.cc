#include "tools/characterize/p2p_matrix.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>

#include "common/json_text.h"

namespace weft::characterize {
namespace {

constexpr size_t kLatencyBytes = 8;
constexpr int kLatencyIters = 100;
constexpr size_t kBytesPerSize = 16u << 20;  // each size moves about this much per direction

int itersFor(size_t bytes) {
  if (bytes <= kLatencyBytes) return kLatencyIters;
  return static_cast<int>(std::clamp<size_t>(kBytesPerSize / bytes, 5, kLatencyIters));
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t half = values.size() / 2;
  return values.size() % 2 ? values[half] : (values[half - 1] + values[half]) / 2;
}

struct Buffers {
  std::unique_ptr<char, decltype(&std::free)> data{nullptr, &std::free};
  char small[64] = {0};
};

// The sender's round trips of `bytes` out and 8 back; the receiver's side of them. Returns the
// median round trip in microseconds (sender) or 0 (receiver).
double pingPong(ncclComm_t comm, bool sender, int peer, char* buffer, char* reply, size_t bytes, int iters) {
  std::vector<double> trips;
  for (int i = -1; i < iters; ++i) {  // iteration -1 warms the connection up
    const double t0 = monotonicSeconds();
    if (sender) {
      checkNccl(ncclSend(buffer, bytes, ncclUint8, peer, comm, nullptr), comm, "ncclSend");
      checkNccl(ncclRecv(reply, kLatencyBytes, ncclUint8, peer, comm, nullptr), comm, "ncclRecv");
    } else {
      checkNccl(ncclRecv(buffer, bytes, ncclUint8, peer, comm, nullptr), comm, "ncclRecv");
      checkNccl(ncclSend(reply, kLatencyBytes, ncclUint8, peer, comm, nullptr), comm, "ncclSend");
    }
    if (i >= 0) trips.push_back((monotonicSeconds() - t0) * 1e6);
  }
  return sender ? median(trips) : 0.0;
}

}  // namespace

std::vector<size_t> p2pSizes(size_t maxBytes) {
  std::vector<size_t> sizes{kLatencyBytes};
  for (size_t s : {size_t{64} << 10, size_t{1} << 20})
    if (s < maxBytes) sizes.push_back(s);
  if (maxBytes > kLatencyBytes) sizes.push_back(maxBytes);
  return sizes;
}

double estimateP2pSeconds(int nranks, size_t maxBytes, double latencyUs, double bandwidthGBps) {
  double perDirection = 0;
  for (size_t s : p2pSizes(maxBytes))
    perDirection += (itersFor(s) + 1) * (2 * latencyUs * 1e-6 + static_cast<double>(s) / (bandwidthGBps * 1e9));
  return perDirection * nranks * (nranks - 1);
}

P2pMatrix measureP2pMatrix(RankExchange* exchange, RunControl* control, size_t maxBytes) {
  const int n = exchange->nranks(), me = exchange->rank();
  P2pMatrix matrix;
  matrix.sizes = p2pSizes(maxBytes);
  matrix.nranks = n;
  matrix.oneWayUs.assign(static_cast<size_t>(n) * n * matrix.sizes.size(), 0.0);
  const size_t bytes = std::max<size_t>(maxBytes, 4096);
  std::unique_ptr<char, decltype(&std::free)> buffer(
      static_cast<char*>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096)), &std::free);
  if (!buffer) throw std::runtime_error("cannot allocate the point-to-point buffer");
  std::memset(buffer.get(), 1, bytes);  // pre-fault now, not inside the timed loop
  char reply[kLatencyBytes] = {0};

  const double estimate = estimateP2pSeconds(n, maxBytes, 20, 1);
  control->beginPhase("point-to-point", n * (n - 1), estimate);
  bool stopped = false;
  for (int from = 0; from < n && !stopped; ++from) {
    for (int to = 0; to < n; ++to) {
      if (from == to) continue;
      if ((stopped = control->shouldStop())) break;
      control->beginUnit(std::to_string(from) + " -> " + std::to_string(to), estimate / (n * (n - 1)));
      if (me != from && me != to) continue;  // ranks outside the pair wait in the next shouldStop
      const bool sender = me == from;
      const int peer = sender ? to : from;
      double halfTrip = 0;
      for (size_t k = 0; k < matrix.sizes.size(); ++k) {
        const size_t s = matrix.sizes[k];
        const double trip = pingPong(exchange->comm(), sender, peer, buffer.get(), reply, s, itersFor(s));
        if (!sender) continue;
        if (k == 0) halfTrip = trip / 2;
        matrix.oneWayUs[(static_cast<size_t>(from) * n + to) * matrix.sizes.size() + k] =
            k == 0 ? halfTrip : std::max(trip - halfTrip, 1e-3);
      }
    }
  }
  if (!stopped) control->endPhase();
  // Every rank gets here, stopped or not (the stop is agreed): each entry was written by its
  // sender alone, and rank 0 keeps every pair measured before a stop.
  exchange->sumOverRanks(&matrix.oneWayUs);
  return matrix;
}

std::string p2pJson(const P2pMatrix& matrix, const std::vector<RankSite>& sites) {
  std::ostringstream out;
  out << "{\"sizes\": [";
  for (size_t k = 0; k < matrix.sizes.size(); ++k) out << (k ? ", " : "") << matrix.sizes[k];
  out << "], \"iters\": [";
  for (size_t k = 0; k < matrix.sizes.size(); ++k) out << (k ? ", " : "") << itersFor(matrix.sizes[k]);
  out << "], \"pairs\": [";
  bool first = true;
  const size_t last = matrix.sizes.size() - 1;
  for (int from = 0; from < matrix.nranks; ++from) {
    for (int to = 0; to < matrix.nranks; ++to) {
      if (from == to || matrix.at(from, to, last) <= 0) continue;
      out << (first ? "\n  " : ",\n  ") << "{\"from\": " << from << ", \"to\": " << to
          << ", \"class\": " << jsonQuote(linkClass(sites[from], sites[to]))
          << ", \"latency_us\": " << jsonNumber(matrix.at(from, to, 0)) << ", \"times_us\": {";
      for (size_t k = 0; k < matrix.sizes.size(); ++k)
        out << (k ? ", " : "") << "\"" << matrix.sizes[k] << "\": " << jsonNumber(matrix.at(from, to, k));
      out << "}, \"bandwidth_GBps\": " << jsonNumber(matrix.bandwidthGBps(from, to)) << "}";
      first = false;
    }
  }
  out << "\n]}";
  return out.str();
}

void slowestPair(const P2pMatrix& matrix, double* latencyUs, double* bandwidthGBps) {
  *latencyUs = 20;
  *bandwidthGBps = 1;
  double worstLatency = 0, worstBandwidth = 0;
  const size_t last = matrix.sizes.size() - 1;
  for (int from = 0; from < matrix.nranks; ++from) {
    for (int to = 0; to < matrix.nranks; ++to) {
      if (from == to || matrix.at(from, to, last) <= 0) continue;
      worstLatency = std::max(worstLatency, matrix.at(from, to, 0));
      const double bw = matrix.bandwidthGBps(from, to);
      worstBandwidth = worstBandwidth == 0 ? bw : std::min(worstBandwidth, bw);
    }
  }
  if (worstLatency > 0) *latencyUs = worstLatency;
  if (worstBandwidth > 0) *bandwidthGBps = worstBandwidth;
}

}  // namespace weft::characterize
