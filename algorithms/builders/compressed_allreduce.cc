#include "algorithms/builders/compressed_allreduce.h"

#include <algorithm>

#include "algorithms/builders/split_evenly.h"

namespace weft {

namespace {

size_t granuleOf(const compression::CodecConfig& codec) {
  switch (codec.kind) {
    case compression::CodecKind::kInt8:
    case compression::CodecKind::kInt4:
    case compression::CodecKind::kSign: return codec.blockSize;
    default: return 64;
  }
}

constexpr size_t kMaxSliceElements = size_t{1} << 20;

}  // namespace

CompressedAlgorithm compressedAlgorithmFor(const compression::CodecConfig& codec) {
  switch (codec.kind) {
    case compression::CodecKind::kFp16:
    case compression::CodecKind::kBf16:
    case compression::CodecKind::kInt8:
    case compression::CodecKind::kInt4: return CompressedAlgorithm::QuantizedRing;
    default: return CompressedAlgorithm::AllGather;
  }
}

size_t compressedSliceElements(const compression::CodecConfig& codec, size_t slotBytes) {
  const size_t g = granuleOf(codec);
  if (g == 0 || compression::encodedBytes(codec, g) > slotBytes) return 0;
  // encodedBytes grows with the count: the largest multiple of g that fits, by bisection.
  size_t lo = 1, hi = std::max<size_t>(1, kMaxSliceElements / g);
  if (compression::encodedBytes(codec, hi * g) <= slotBytes) return hi * g;
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (compression::encodedBytes(codec, mid * g) <= slotBytes)
      lo = mid;
    else
      hi = mid;
  }
  return lo * g;
}

size_t compressedEncodedBytes(const compression::CodecConfig& codec, size_t sliceElements, size_t count) {
  if (sliceElements == 0 || count == 0) return 0;
  size_t full = count / sliceElements, rest = count % sliceElements;
  return full * compression::encodedBytes(codec, sliceElements) + (rest ? compression::encodedBytes(codec, rest) : 0);
}

Schedule buildCompressedAllReduce(const CompressedAllReduceParams& p) {
  Schedule schedule;
  const int n = static_cast<int>(p.ringOrder.size());
  const size_t se = compressedSliceElements(p.codec, p.slotBytes);
  if (n < 2 || p.count == 0 || se == 0) return schedule;  // the caller runs these exactly
  schedule.codecSliceElements = se;
  schedule.encodedSliceBytes = compression::encodedBytes(p.codec, se);
  schedule.divisor = p.average ? static_cast<uint64_t>(n) : 1;
  const int position =
      static_cast<int>(std::find(p.ringOrder.begin(), p.ringOrder.end(), p.rank) - p.ringOrder.begin());
  const int next = p.ringOrder[(position + 1) % n];
  const int prev = p.ringOrder[(position + n - 1) % n];
  const size_t encodedBase = (p.count * sizeof(float) + 63) / 64 * 64;

  struct Span {
    size_t begin, end;
  };
  auto acc = [](Span s) {
    return BufferRange{BufferKind::Scratch, s.begin * sizeof(float), (s.end - s.begin) * sizeof(float)};
  };
  auto user = [&](BufferKind kind, Span s) {
    return BufferRange{kind, s.begin * p.elementSize, (s.end - s.begin) * p.elementSize};
  };
  auto add = [&](StepKind kind, int peer, BufferRange src, BufferRange dst, BufferRange encoded = {}) {
    Step step;
    step.kind = kind;
    step.peer = peer;
    step.src = src;
    step.dst = dst;
    step.src2 = encoded;
    schedule.steps.push_back(step);
  };

  // A float32 sum is decoded straight into the receive buffer: no final copy out of scratch.
  const bool decodeIntoRecv = p.elementSize == sizeof(float) && !p.average;
  if (compressedAlgorithmFor(p.codec) == CompressedAlgorithm::QuantizedRing) {
    // Chunks by ring position, cut on codec blocks so that slices start on block boundaries.
    const size_t g = granuleOf(p.codec);
    const size_t blocks = (p.count + g - 1) / g;
    std::vector<Span> chunks(n);
    std::vector<BufferRange> encoded(n);
    size_t offset = encodedBase;
    for (int c = 0; c < n; ++c) {
      ElementSpan b = splitEvenly(blocks, n, c);
      chunks[c] = {std::min(b.begin * g, p.count), std::min(b.end * g, p.count)};
      size_t bytes = compressedEncodedBytes(p.codec, se, chunks[c].end - chunks[c].begin);
      encoded[c] = BufferRange{BufferKind::Scratch, offset, bytes};
      offset += (bytes + 63) / 64 * 64;
    }
    schedule.scratchBytes = offset;
    auto chunk = [&](int c) { return ((c % n) + n) % n; };
    for (int s = 0; s < n; ++s) {
      Span span = chunks[chunk(position - s)];
      add(StepKind::ToFloat, -1, user(BufferKind::Send, span), acc(span));
    }
    // Reduce-scatter: decode, add, re-encode at every hop.
    for (int s = 0; s < n - 1; ++s) {
      Span out = chunks[chunk(position - s)];
      Span in = chunks[chunk(position - s - 1)];
      add(StepKind::EncodeSend, next, acc(out), {});
      add(StepKind::RecvDecodeAdd, prev, acc(in), acc(in));
    }
    // All-gather: the owner encodes its reduced chunk once (keeping the decoded value itself),
    // and the bytes travel the ring unchanged.
    auto result = [&](Span span) { return decodeIntoRecv ? user(BufferKind::Recv, span) : acc(span); };
    Span own = chunks[chunk(position + 1)];
    add(StepKind::EncodeSend, next, acc(own), result(own));
    for (int s = 0; s < n - 1; ++s) {
      int c = chunk(position - s);
      add(StepKind::RecvEncoded, prev, {}, {}, encoded[c]);
      if (s < n - 2) add(StepKind::SendEncoded, next, {}, {}, encoded[c]);
      add(StepKind::Decode, -1, {}, result(chunks[c]), encoded[c]);
    }
    if (decodeIntoRecv) return schedule;
    for (int s = -1; s < n - 1; ++s) {
      Span span = chunks[chunk(position - s)];
      add(StepKind::FromFloat, -1, acc(span), user(BufferKind::Recv, span));
    }
    return schedule;
  }

  // All-gather of each rank's encoded input, decoded and summed in rank order.
  const Span whole{0, p.count};
  const size_t total = compressedEncodedBytes(p.codec, se, p.count);
  const size_t pitch = (total + 63) / 64 * 64;
  auto encodedOf = [&](int r) {
    return BufferRange{BufferKind::Scratch, encodedBase + static_cast<size_t>(r) * pitch, total};
  };
  schedule.scratchBytes = encodedBase + static_cast<size_t>(n) * pitch;
  schedule.encodesToFloatOnce = true;
  add(StepKind::ToFloat, -1, user(BufferKind::Send, whole), acc(whole));
  add(StepKind::EncodeSend, next, acc(whole), {}, encodedOf(p.rank));
  for (int s = 0; s < n - 1; ++s) {
    int origin = p.ringOrder[(position - s - 1 + 2 * n) % n];
    add(StepKind::RecvEncoded, prev, {}, {}, encodedOf(origin));
    if (s < n - 2) add(StepKind::SendEncoded, next, {}, {}, encodedOf(origin));
  }
  const BufferRange sum = decodeIntoRecv ? user(BufferKind::Recv, whole) : acc(whole);
  add(StepKind::Decode, -1, {}, sum, encodedOf(0));
  for (int r = 1; r < n; ++r) add(StepKind::DecodeAdd, -1, sum, sum, encodedOf(r));
  if (!decodeIntoRecv) add(StepKind::FromFloat, -1, acc(whole), user(BufferKind::Recv, whole));
  return schedule;
}

}  // namespace weft
