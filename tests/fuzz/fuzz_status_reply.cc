// What `weft-info status` and a timed-out rank read from other processes: a status reply's text
// (runtime/status/status_report.h), then the culprit rule over whatever it decoded
// (job_diagnosis.h). Any text must be refused or decoded, and any decoded answers (ranks out of
// order, peers out of range, one communicator told twice) diagnosed, without a crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/status/job_diagnosis.h"
#include "runtime/status/status_report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 1 << 16) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<weft::RankStatus> answers;
  std::string error;
  if (!weft::decodeStatus(text, &answers, &error)) return 0;
  // What was decoded encodes to text that decodes to as many answers.
  std::vector<weft::RankStatus> again;
  if (!weft::decodeStatus(weft::encodeStatus(answers), &again, &error) || again.size() != answers.size())
    __builtin_trap();
  // The views are tables of nranks entries (up to 2^20 each, as decodeStatus allows): bound the
  // run's memory, not the rule's input.
  size_t cells = 0;
  for (const weft::RankStatus& a : answers) cells += static_cast<size_t>(a.nranks);
  if (cells > 4096) return 0;
  for (weft::CommunicatorView& view : weft::groupByCommunicator(answers)) {
    if (view.nranks > 0) view.unasked[0] = true;
    (void)weft::diagnose(view);
    for (const auto& rank : view.ranks)
      if (rank) (void)weft::rankActivity(*rank);
  }
  return 0;
}
