#include "perf/perf_json.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "common/json_text.h"

namespace weft::perf {
namespace {

// Builds the document in nccl-tests' order. Values are appended raw: callers quote strings.
class JsonObject {
 public:
  explicit JsonObject(std::string* out) : out_(out) { *out_ += '{'; }
  ~JsonObject() { *out_ += '}'; }
  std::string& key(const char* name) {
    if (!first_) *out_ += ',';
    first_ = false;
    *out_ += jsonQuote(name) + ':';
    return *out_;
  }

 private:
  std::string* out_;
  bool first_ = true;
};

std::string number(double v) { return jsonNumber(v, "%f"); }          // nccl-tests: "%lf"
std::string flag(bool v) { return jsonQuote(v ? "true" : "false"); }  // nccl-tests writes booleans as strings

template <typename T, typename F>
std::string list(const std::vector<T>& items, F&& format) {
  std::string s = "[";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? "," : "") + format(items[i]);
  return s + "]";
}

void appendDevice(const PerfJsonDevice& d, std::string* out) {
  JsonObject o(out);
  o.key("rank") += std::to_string(d.rank);
  o.key("group") += std::to_string(d.group);
  o.key("pid") += std::to_string(d.pid);
  o.key("hostname") += jsonQuote(d.hostname);
  o.key("device") += std::to_string(d.device);
  o.key("device_hex") += jsonQuote(d.deviceHex);
  o.key("device_info") += jsonQuote(d.deviceInfo);
}

void appendConfig(const PerfJsonRun& run, std::string* out) {
  const PerfOptions& opt = run.options;
  JsonObject o(out);
  o.key("nthreads") += "1";
  o.key("ngpus") += "1";
  o.key("minimum_bytes") += std::to_string(opt.minBytes);
  o.key("maximum_bytes") += std::to_string(opt.maxBytes);
  if (opt.stepFactor > 1)
    o.key("step_factor") += std::to_string(opt.stepFactor);
  else
    o.key("step_bytes") += std::to_string(opt.stepBytes);
  o.key("warmup_iters") += std::to_string(opt.warmupIters);
  o.key("iterations") += std::to_string(opt.iters);
  o.key("aggregated_iterations") += std::to_string(opt.aggIters);
  o.key("validation") += std::to_string(opt.check);
  o.key("graph") += std::to_string(opt.cudaGraph);
  o.key("blocking_collectives") += flag(opt.blocking != 0);
  o.key("per_iter_timing") += flag(opt.perIterTiming != 0);
  o.key("per_iter_skip") += std::to_string(opt.perIterSkip);
  o.key("parallel_init") += flag(false);
  std::string& devices = o.key("devices");
  devices += '[';
  for (size_t i = 0; i < run.devices.size(); ++i) {
    if (i) devices += ',';
    appendDevice(run.devices[i], &devices);
  }
  devices += ']';
}

void appendPlacement(const PerfJsonPlacement& p, bool cputime, std::string* out) {
  JsonObject o(out);
  o.key(cputime ? "cpu_time" : "time") += number(p.timeUs);
  o.key("alg_bw") += number(p.algBw);
  o.key("bus_bw") += number(p.busBw);
  o.key("nwrong") += p.wrong < 0 ? "null" : number(static_cast<double>(p.wrong));
}

void appendIterations(const PerfJsonPlacement& p, std::string* out) {
  JsonObject o(out);
  o.key("skipped_iterations") += std::to_string(p.skippedIterations);
  o.key("min_us") += number(p.statsUs.min);
  o.key("max_us") += number(p.statsUs.max);
  o.key("avg_us") += number(p.statsUs.avg);
  o.key("p50_us") += number(p.statsUs.p50);
  o.key("p95_us") += number(p.statsUs.p95);
  o.key("p99_us") += number(p.statsUs.p99);
  o.key("stdev_us") += number(p.statsUs.stdev);
  o.key("cv_pct") += number(p.statsUs.cvPct);
  o.key("times_us") += list(p.timesUs, number);
  if (p.perProcessUs.size() > 1)
    o.key("per_process_max_times_us") +=
        list(p.perProcessUs, [](const std::vector<double>& row) { return list(row, number); });
}

void appendResult(const PerfJsonResult& r, bool cputime, std::string* out) {
  JsonObject o(out);
  o.key("size") += std::to_string(r.size);
  o.key("count") += std::to_string(r.count);
  o.key("type") += jsonQuote(r.type);
  o.key("redop") += jsonQuote(r.redop);
  char root[16];
  std::snprintf(root, sizeof root, "%6i", r.root);  // nccl-tests writes the column's text
  o.key("root") += jsonQuote(root);
  appendPlacement(r.outOfPlace, cputime, &o.key("out_of_place"));
  if (r.outOfPlace.hasIterations) appendIterations(r.outOfPlace, &o.key("out_of_place_per_iter"));
  appendPlacement(r.inPlace, cputime, &o.key("in_place"));
  if (r.inPlace.hasIterations) appendIterations(r.inPlace, &o.key("in_place_per_iter"));
  o.key("actual_iterations") += std::to_string(r.actualIterations);
  o.key("experiment_name") += jsonQuote("");
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string formatPerfJson(const PerfJsonRun& run) {
  std::string out;
  {
    JsonObject o(&out);
    o.key("version") += "3";
    o.key("start_time") += jsonQuote(run.startTime);
    o.key("args") += list(run.args, [](const std::string& a) { return jsonQuote(a); });
    o.key("env") += list(run.env, [](const std::string& e) { return jsonQuote(e); });
    o.key("nccl_version") += std::to_string(run.ncclVersion);
    appendConfig(run, &o.key("config"));
    std::string& results = o.key("results");
    results += '[';
    for (size_t i = 0; i < run.results.size(); ++i) {
      if (i) results += ',';
      appendResult(run.results[i], run.options.reportCputime != 0, &results);
    }
    results += ']';
    {
      JsonObject bounds(&o.key("out_of_bounds"));
      bounds.key("count") += std::to_string(run.outOfBounds);
      bounds.key("okay") += flag(run.outOfBounds == 0);
    }
    {
      JsonObject bandwidth(&o.key("average_bus_bandwidth"));
      bandwidth.key("bandwidth") += number(run.averageBusBw);
      bandwidth.key("okay") += jsonQuote("unchecked");  // nccl-tests' -D check_avg_bw is not offered
    }
    o.key("errors") += list(run.errors, [](const std::string& e) { return jsonQuote(e); });
    o.key("end_time") += jsonQuote(run.endTime);
  }
  return out + "\n";
}

std::string redactedEnvironmentEntry(const std::string& entry) {
  const size_t eq = entry.find('=');
  if (eq == std::string::npos) return entry;
  const std::string name = upper(entry.substr(0, eq));
  for (const char* secret : {"KEY", "SECRET", "TOKEN", "PASSW", "CREDENTIAL", "PRIVATE"})
    if (name.find(secret) != std::string::npos) return entry.substr(0, eq + 1) + "<redacted>";
  return entry;
}

bool parseRankLine(const std::string& line, PerfJsonDevice* out) {
  char host[256] = {0}, hex[128] = {0};
  int consumed = 0;
  if (std::sscanf(line.c_str(), "#  Rank %d Group %d Pid %d on %255s device %d [%127[^]]] %n", &out->rank, &out->group,
                  &out->pid, host, &out->device, hex, &consumed) < 6 ||
      consumed == 0)
    return false;
  std::string rest = line.substr(static_cast<size_t>(consumed));
  while (!rest.empty() && (rest.back() == '\n' || rest.back() == '\r')) rest.pop_back();
  out->hostname = host;
  out->deviceHex = hex;
  out->deviceInfo = rest;
  return true;
}

std::string perfJsonTimeNow() {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[64];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &local);
  return text;
}

int createPerfJsonFile(const std::string& path, std::string* chosen, std::string* error) {
  for (int attempt = -1; attempt < 1000; ++attempt) {
    std::string candidate = attempt < 0 ? path : path + "." + std::to_string(attempt);
    int fd = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      *chosen = candidate;
      return fd;
    }
    if (errno != EEXIST) {
      *error = "cannot create " + candidate + ": " + std::strerror(errno);
      return -1;
    }
  }
  *error = path + " and " + path + ".0 to .999 all exist";
  return -1;
}

}  // namespace weft::perf
