#include "algorithms/simulation/link_model_simulation.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>
#include <utility>

#include "algorithms/builders/rail_layout.h"
#include "algorithms/builders/tree_allreduce.h"
#include "algorithms/cost/algorithm_selection.h"

namespace weft {

ContendedLinkModel::ContendedLinkModel(const CostModel& model, const std::vector<std::vector<int>>& nodes, int nranks,
                                       double byteScale, int streams)
    : model_(model),
      scale_(byteScale),
      streams_(std::max(1, streams)),
      nics_(std::max(1, model.nicsPerNode)),
      nodeOf_(nranks, 0),
      localOf_(nranks, 0) {
  if (nodes.empty()) {
    std::iota(localOf_.begin(), localOf_.end(), 0);
  } else {
    for (size_t k = 0; k < nodes.size(); ++k)
      for (size_t i = 0; i < nodes[k].size(); ++i)
        if (nodes[k][i] >= 0 && nodes[k][i] < nranks)
          nodeOf_[nodes[k][i]] = static_cast<int>(k), localOf_[nodes[k][i]] = static_cast<int>(i);
  }
  size_t nodeCount = std::max<size_t>(1, nodes.size());
  portOut_.resize(nranks), portIn_.resize(nranks);
  nicOut_.resize(nodeCount * nics_), nicIn_.resize(nodeCount * nics_);
}

double ContendedLinkModel::Calendar::fit(double start, double duration) const {
  double t = start;
  auto it = busy.upper_bound(t);
  if (it != busy.begin()) {
    auto before = std::prev(it);
    if (before->second > t) t = before->second;
  }
  for (; it != busy.end() && it->first < t + duration; ++it) t = std::max(t, it->second);
  return t;
}

void ContendedLinkModel::Calendar::reserve(double start, double duration) {
  if (duration <= 0) return;
  double end = start + duration;
  // Merge with a neighbour that touches, which keeps back-to-back transfers one interval.
  auto next = busy.lower_bound(start);
  if (next != busy.end() && next->first <= end) {
    end = std::max(end, next->second);
    next = busy.erase(next);
  }
  if (next != busy.begin()) {
    auto before = std::prev(next);
    if (before->second >= start) {
      before->second = std::max(before->second, end);
      return;
    }
  }
  busy.emplace(start, end);
}

double ContendedLinkModel::transferTime(int src, int dst, size_t bytes) const {
  src /= streams_, dst /= streams_;
  const LinkCost& link = sameNode(src, dst) ? model_.intra : model_.nic;
  return link.timeUs(static_cast<double>(bytes) * scale_) * 1e-6;
}

double ContendedLinkModel::arrivalTime(int src, int dst, size_t bytes, double start) const {
  src /= streams_, dst /= streams_;
  const bool local = sameNode(src, dst);
  const LinkCost& link = local ? model_.intra : model_.nic;
  Calendar& out = local ? portOut_[src] : nicOut_[nodeOf_[src] * nics_ + localOf_[src] % nics_];
  Calendar& in = local ? portIn_[dst] : nicIn_[nodeOf_[dst] * nics_ + localOf_[dst] % nics_];
  const double duration = static_cast<double>(bytes) * scale_ / (link.bandwidthGBps * 1e9);
  double t = start;
  if (duration > 0) {
    // The earliest time both sides are free for `duration` (each fit only moves later).
    for (int i = 0; i < 1000; ++i) {
      double a = out.fit(t, duration);
      double b = in.fit(a, duration);
      t = b;
      if (a == b) break;
    }
    out.reserve(t, duration);
    in.reserve(t, duration);
  }
  return t + duration + link.latencyUs * 1e-6;
}

double ContendedLinkModel::localTime(int rank, StepKind kind, size_t bytes) const {
  (void)rank;
  if (kind == StepKind::Recv || kind == StepKind::RecvReduce) return 0.0;
  return static_cast<double>(bytes) * scale_ / (model_.memory.bandwidthGBps * 1e9);
}

void ContendedLinkModel::reset() const {
  for (auto* calendars : {&portOut_, &portIn_, &nicOut_, &nicIn_})
    for (Calendar& c : *calendars) c.busy.clear();
}

namespace {

size_t stepBytesOf(const Step& s) { return s.kind == StepKind::Recv ? s.dst.bytes : s.src.bytes; }

BufferRange sliceOf(BufferRange range, size_t offset, size_t bytes) {
  if (range.bytes == 0) return range;
  range.offset += offset;
  range.bytes = bytes;
  return range;
}

}  // namespace

Schedule pipelineSchedule(const Schedule& schedule, size_t sliceBytes, const std::vector<size_t>& phaseStarts) {
  Schedule out = schedule;
  out.steps.clear();
  sliceBytes = std::max<size_t>(1, sliceBytes);
  const auto& steps = schedule.steps;
  auto emitPhase = [&](size_t begin, size_t end) {
    size_t slices = 1;
    for (size_t i = begin; i < end; ++i)
      slices = std::max(slices, (stepBytesOf(steps[i]) + sliceBytes - 1) / sliceBytes);
    for (size_t j = 0; j < slices; ++j)
      for (size_t i = begin; i < end; ++i) {
        const Step& s = steps[i];
        size_t bytes = stepBytesOf(s);
        if (isFence(s.kind) || bytes == 0) {
          if (j == 0) out.steps.push_back(s);
          continue;
        }
        size_t offset = j * sliceBytes;
        if (offset >= bytes) continue;
        size_t length = std::min(sliceBytes, bytes - offset);
        Step t = s;
        t.src = sliceOf(s.src, offset, length);
        t.dst = sliceOf(s.dst, offset, length);
        t.src2 = sliceOf(s.src2, offset, length);
        t.dst2 = sliceOf(s.dst2, offset, length);
        out.steps.push_back(t);
      }
  };
  size_t begin = 0;
  for (size_t start : phaseStarts) {
    start = std::min(start, steps.size());
    if (start <= begin) continue;
    emitPhase(begin, start);
    begin = start;
  }
  emitPhase(begin, steps.size());
  return out;
}

SimulatedAllReduce simulateAllReduceTime(Algorithm algorithm, size_t bytes, int nranks,
                                         const std::vector<std::vector<int>>& nodesIn, const CostModel& model) {
  SimulatedAllReduce result;
  if (nranks < 1) {
    result.error = "no ranks";
    return result;
  }
  std::vector<std::vector<int>> nodes = nodesIn;
  if (nodes.empty()) {
    nodes.emplace_back(nranks);
    std::iota(nodes[0].begin(), nodes[0].end(), 0);
  }
  if (bytes == 0) {
    result.ok = true;
    return result;
  }
  const size_t es = 4;
  const size_t exact = (bytes + es - 1) / es;
  const size_t limit = std::max<size_t>(4096, 16 * static_cast<size_t>(nranks));
  const size_t count = std::min(exact, limit);
  result.simulatedCount = count;
  result.byteScale = static_cast<double>(bytes) / static_cast<double>(count * es);

  AllReduceShape shape{.count = count,
                       .elementSize = es,
                       .nranks = nranks,
                       .order = nodeMajorOrder(nodes),
                       .nodes = nodes,
                       .channels = model.ringChannels(nodes, static_cast<double>(bytes))};
  std::vector<Schedule> schedules;
  schedules.reserve(nranks);
  // The tree's slices: the executor's slice size in real bytes, at most 64 per half.
  size_t sliceElements = 0;
  if (algorithm == Algorithm::Tree) {
    double realSlice = std::max(static_cast<double>(model.sliceBytes), static_cast<double>(bytes) / 2 / 64);
    sliceElements = static_cast<size_t>(std::ceil(realSlice / result.byteScale / es));
    sliceElements = std::max<size_t>(1, sliceElements);
  }
  // The tree's two halves are independent streams the executor runs side by side: each rank's
  // steps on half t run as virtual rank 2 * rank + t (the link model maps it back).
  const int streams = algorithm == Algorithm::Tree && nranks > 1 ? 2 : 1;
  schedules.resize(static_cast<size_t>(streams) * nranks);
  for (int r = 0; r < nranks; ++r) {
    shape.rank = r;
    Schedule s = buildAllReduceSchedule(algorithm, shape);
    if (streams == 1) {
      schedules[r] = std::move(s);  // one stream: virtual rank = rank
      continue;
    }
    const size_t half0 = (count - count / 2) * es;  // splitEvenly: the first half takes the extra
    const int position = static_cast<int>(std::find(shape.order.begin(), shape.order.end(), r) - shape.order.begin());
    for (int t = 0; t < 2; ++t) {
      Schedule part = s;
      part.steps.clear();
      for (const Step& step : s.steps) {
        const BufferRange& range = step.kind == StepKind::Recv ? step.dst : step.src;
        if ((range.offset >= half0) != (t == 1)) continue;
        Step copy = step;
        if (copy.peer >= 0) copy.peer = copy.peer * 2 + t;
        part.steps.push_back(copy);
      }
      // The reduction's steps come first (tree_allreduce.cc): one RecvReduce per child, then a
      // Send to the parent (a Divide at the root only on average).
      TreeLinks links = doubleBinaryTree(nranks, position, t);
      size_t up = links.children.size() + (links.parent >= 0 ? 1 : 0);
      schedules[r * 2 + t] = pipelineSchedule(part, sliceElements * es, {up});
    }
  }
  std::vector<std::vector<float>> send(nranks, std::vector<float>(count)),
      recv(nranks, std::vector<float>(count, -1.0f));
  std::vector<SimulatedBuffers> buffers(schedules.size());
  for (int r = 0; r < nranks; ++r) {
    for (size_t i = 0; i < count; ++i) send[r][i] = static_cast<float>((r * 7 + i) % 13);
    buffers[r].send = reinterpret_cast<const char*>(send[r].data());
    buffers[r].recv = reinterpret_cast<char*>(recv[r].data());
    buffers[r].sendBytes = buffers[r].recvBytes = count * es;
  }
  if (streams > 1) {
    std::vector<SimulatedBuffers> perRank = buffers;
    buffers.resize(schedules.size());
    for (size_t v = 0; v < buffers.size(); ++v) buffers[v] = perRank[v / streams];
  }
  ContendedLinkModel links(model, nodes, nranks, result.byteScale, streams);
  SimulationOptions options;
  options.type = ncclFloat32;
  options.links = &links;
  options.checkHazards = false;  // distinct buffers: nothing aliases
  options.stepsPerTurn = 1;      // concurrent senders interleave on shared links
  SimulationResult run = simulate(schedules, buffers, options);
  if (!run.ok) {
    result.error = run.error;
    return result;
  }
  for (size_t i = 0; i < count; ++i) {
    double expected = 0;
    for (int r = 0; r < nranks; ++r) expected += static_cast<double>((r * 7 + i) % 13);
    for (int r = 0; r < nranks; ++r)
      if (recv[r][i] != static_cast<float>(expected)) {
        result.error = std::string(algorithmName(algorithm)) + ": rank " + std::to_string(r) + " element " +
                       std::to_string(i) + " is wrong after the simulation";
        return result;
      }
  }
  result.ok = true;
  result.timeUs = run.time * 1e6;
  return result;
}

}  // namespace weft
