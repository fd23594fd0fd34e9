#include "algorithms/builders/strided_blocks.h"

#include <cassert>
#include <vector>

namespace weft {

namespace {

// The ranges of `step` that name this rank's `strided` buffer.
template <typename F>
void forEachStridedRange(Step& step, BufferKind strided, F&& f) {
  for (BufferRange* range : {&step.src, &step.dst, &step.src2, &step.dst2})
    if (range->bytes && range->buffer == strided && range->owner < 0) f(*range);
}

bool insideOneBlock(const BufferRange& range, size_t blockBytes) {
  return range.offset / blockBytes == (range.offset + range.bytes - 1) / blockBytes;
}

// How a step touches block `block` of the strided buffer (offsets as in the contiguous schedule).
bool readsBlock(const Step& step, BufferKind strided, size_t block, size_t blockBytes) {
  const BufferRange whole{strided, block * blockBytes, blockBytes};
  return readsSources(step) &&
         (step.src.overlaps(whole) || (step.kind == StepKind::Reduce && step.src2.overlaps(whole)));
}
bool writesBlock(const Step& step, BufferKind strided, size_t block, size_t blockBytes) {
  const BufferRange whole{strided, block * blockBytes, blockBytes};
  return writesDestinations(step) && (step.dst.overlaps(whole) || step.dst2.overlaps(whole));
}

bool writesWholeBlock(const Step& step, const BufferRange& whole) {
  auto covers = [&](const BufferRange& r) {
    return r.buffer == whole.buffer && r.owner < 0 && r.offset <= whole.offset &&
           r.offset + r.bytes >= whole.offset + whole.bytes;
  };
  return covers(step.dst) || covers(step.dst2);
}

}  // namespace

Schedule withStridedBlocks(Schedule schedule, BufferKind strided, size_t blockBytes, size_t strideBytes, int nranks) {
  if (blockBytes == 0 || strideBytes == blockBytes) return schedule;
  assert(strideBytes > blockBytes);  // a slice's blocks lie inside the whole call's
  bool spansBlocks = false;
  for (Step& step : schedule.steps)
    forEachStridedRange(step, strided,
                        [&](BufferRange& r) { spansBlocks = spansBlocks || !insideOneBlock(r, blockBytes); });
  if (!spansBlocks) {
    for (Step& step : schedule.steps)
      forEachStridedRange(step, strided, [&](BufferRange& r) {
        r.offset = r.offset / blockBytes * strideBytes + r.offset % blockBytes;
      });
    return schedule;
  }

  // The contiguous copy: nranks blocks in Scratch after the schedule's own scratch.
  const size_t base = (schedule.scratchBytes + 63) & ~size_t{63};
  const size_t blocks = static_cast<size_t>(nranks);
  std::vector<Step> in, out;
  for (size_t b = 0; b < blocks; ++b) {
    const BufferRange real{strided, b * strideBytes, blockBytes};
    const BufferRange copy{BufferKind::Scratch, base + b * blockBytes, blockBytes};
    // Copied in unless the first step that touches it overwrites all of it (a received block).
    for (const Step& step : schedule.steps) {
      const bool reads = readsBlock(step, strided, b, blockBytes), writes = writesBlock(step, strided, b, blockBytes);
      if (!reads && !writes) continue;
      if (reads || !writesWholeBlock(step, {strided, b * blockBytes, blockBytes}))
        in.push_back({StepKind::Copy, -1, real, copy});
      break;
    }
    for (const Step& step : schedule.steps)
      if (writesBlock(step, strided, b, blockBytes)) {
        out.push_back({StepKind::Copy, -1, copy, real});
        break;
      }
  }
  for (Step& step : schedule.steps)
    forEachStridedRange(step, strided, [&](BufferRange& r) {
      r.buffer = BufferKind::Scratch;
      r.offset += base;
    });
  schedule.scratchBytes = base + blocks * blockBytes;
  schedule.steps.insert(schedule.steps.begin(), in.begin(), in.end());
  schedule.steps.insert(schedule.steps.end(), out.begin(), out.end());
  return schedule;
}

}  // namespace weft
