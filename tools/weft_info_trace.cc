// weft-info trace merge OUT FILE...: joins the WEFT_TRACE files of a job's processes into one
// trace. Every rank already wrote its events on its communicator's rank 0's clock (an offset
// measured after the first call: runtime/exec/collective_trace.h), so joining is putting the
// events side by side; the tool checks that each file is a whole weft trace, and prints each
// rank's measured clock offset.
#include "tools/weft_info_trace.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/safe_file.h"
#include "common/status.h"

namespace weft {

namespace {

constexpr char kHeader[] = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
constexpr char kFooter[] = "\n]}\n";
constexpr size_t kMaxTraceBytes = size_t(4) << 30;

void traceUsage(FILE* to) {
  std::fprintf(to,
               "usage: weft-info trace merge OUT FILE...\n"
               "  joins WEFT_TRACE files (one per process) into OUT, one time line for Chrome or Perfetto.\n");
}

// The events of a weft trace file (between its header and footer), or false with the reason.
bool traceBody(const std::string& path, std::string* body, std::string* error) {
  std::string text;
  if (readRegularFile(path, kMaxTraceBytes, "trace file", &text) != ncclSuccess) {
    *error = lastErrorMessage();
    return false;
  }
  const size_t header = std::strlen(kHeader), footer = std::strlen(kFooter);
  if (text.size() < header + footer - 1 || text.compare(0, header, kHeader) != 0) {
    *error = path + " is not a weft trace (WEFT_TRACE writes it)";
    return false;
  }
  if (text.size() == header + footer - 1 && text.compare(header - 1, footer, kFooter) == 0) {  // no event
    body->clear();
    return true;
  }
  if (text.compare(text.size() - footer, footer, kFooter) != 0) {
    *error = path + " ends before its last line: was the process still running, or killed?";
    return false;
  }
  *body = text.substr(header, text.size() - header - footer);
  return true;
}

// Each "rank R (...)" process name with its clock offset, for the summary.
void printClocks(const std::string& path, const std::string& body) {
  const std::string key = "\"clock_offset_to_rank0_us\":";
  for (size_t at = body.find(key); at != std::string::npos; at = body.find(key, at + 1)) {
    const size_t name = body.rfind("\"name\":\"rank ", at);
    const size_t nameEnd = name == std::string::npos ? name : body.find('"', name + 8);
    const std::string who = name == std::string::npos ? "?" : body.substr(name + 8, nameEnd - name - 8);
    const double offset = std::atof(body.c_str() + at + key.size());
    const size_t rtt = body.find("\"clock_round_trip_us\":", at);
    const double roundTrip = rtt == std::string::npos ? 0 : std::atof(body.c_str() + rtt + 22);
    std::printf("  %s: %s; clock offset to rank 0 %+.3f us (round trip %.3f us)\n", path.c_str(), who.c_str(), offset,
                roundTrip);
  }
}

}  // namespace

int traceCommand(int argc, char** argv) {
  if (argc >= 3 && (!std::strcmp(argv[2], "-h") || !std::strcmp(argv[2], "--help"))) {
    traceUsage(stdout);
    return 0;
  }
  if (argc < 5 || std::strcmp(argv[2], "merge") != 0) {
    traceUsage(stderr);
    return 2;
  }
  const std::string out = argv[3];
  std::string merged = kHeader;
  bool any = false;
  for (int i = 4; i < argc; ++i) {
    if (out == argv[i]) {
      std::fprintf(stderr, "weft-info trace merge: OUT (%s) is also an input\n", argv[i]);
      return 2;
    }
    std::string body, error;
    if (!traceBody(argv[i], &body, &error)) {
      std::fprintf(stderr, "weft-info trace merge: %s\n", error.c_str());
      return 1;
    }
    printClocks(argv[i], body);
    if (body.empty()) continue;
    merged += (any ? ",\n" : "") + body;
    any = true;
  }
  merged += kFooter;
  if (replaceFile(out, merged, "merged trace") != ncclSuccess) {
    std::fprintf(stderr, "weft-info trace merge: %s\n", lastErrorMessage().c_str());
    return 1;
  }
  std::printf("merged %d files into %s\n", argc - 4, out.c_str());
  return 0;
}

}  // namespace weft
