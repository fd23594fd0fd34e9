// weft-info: what weft would do, without running anything, and where running jobs stand.
//
//   weft-info status [PID ...] [--json] [--stats] [--dump] [--timeout SECONDS]
//       every communicator of this host's weft processes (or of PID's jobs): each rank's last
//       issued and completed collective, what it waits for, and the rank holding the others up
//       (tools/weft_info_status.cc).
//   weft-info trace merge OUT FILE...
//       joins the WEFT_TRACE files of a job's processes into one (tools/weft_info_trace.cc).
//   weft-info plan COLLECTIVE SIZE --ranks N [--ranks-per-node L] [--topo FILE] [--direct]
//             [--simulate] [--print-schedule RANK [--algo NAME]]
//       every algorithm's predicted time and bus bandwidth for a COLLECTIVE (allreduce,
//       allgather, reducescatter, broadcast, reduce, alltoall, gather, scatter) of SIZE bytes
//       (as nccl-tests counts them) on N ranks (L per node; default all on one node), the one
//       selection picks, and optionally one rank's schedule (root 0). --simulate adds a column: the time the simulator
//       gives when it runs every rank's schedule against the link model of
//       algorithms/simulation/link_model_simulation.h (per-link latency and bandwidth, NICs and ports shared by
//       concurrent transfers); up to 1024 ranks.
//   weft-info table COLLECTIVE --ranks N[,N...] [--ranks-per-node L] [--topo FILE]
//             [--from SIZE] [--to SIZE] [--step FACTOR]
//       predicted bus bandwidth of every algorithm for sizes from..to (default 8 B to 4 GiB, x2), the choice,
//       the bandwidth ceiling, and the crossover sizes: the table in docs/algorithms.md.
//
// SIZE: bytes, with K, M, G (powers of 1024). --topo loads an hwloc XML topology (NIC speed and
// count, NVLink) for every node; without it: host memory, one 12.5 GB/s NIC per node. The
// WEFT_TUNING_FILE, WEFT_ALGO and NCCL_ALGO variables apply as in the library; with a tuning
// file, plan also prints what the default terms would choose, beside the tuned choice.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/algorithm_registry.h"
#include "algorithms/collective_schedule.h"
#include "algorithms/cost/algorithm_selection.h"
#include "algorithms/cost/cost_model.h"
#include "algorithms/simulation/link_model_simulation.h"
#include "common/settings.h"
#include "common/status.h"
#include "tools/weft_info_status.h"
#include "tools/weft_info_trace.h"
#include "topology/topology_model.h"
#include "topology/topology_xml.h"

using namespace weft;

namespace {

void usage(FILE* to) {
  std::fprintf(to,
               "usage: weft-info status [PID ...] [--json] [--stats] [--dump] [--timeout SECONDS]\n"
               "       weft-info trace merge OUT FILE...\n"
               "       weft-info plan COLLECTIVE SIZE --ranks N [--ranks-per-node L] [--topo FILE] [--direct]\n"
               "                 [--simulate] [--print-schedule RANK [--algo NAME]]\n"
               "       weft-info table COLLECTIVE --ranks N[,N...] [--ranks-per-node L] [--topo FILE]\n"
               "                 [--from SIZE] [--to SIZE] [--step FACTOR]\n"
               "SIZE: bytes with optional K, M, G suffix (powers of 1024). Without --topo: host memory,\n"
               "one 12.5 GB/s NIC per node. WEFT_TUNING_FILE, WEFT_ALGO and NCCL_ALGO apply.\n"
               "COLLECTIVE: allreduce, allgather, reducescatter, broadcast, reduce, alltoall, gather, scatter;\n"
               "--simulate is for allreduce.\n");
}

bool parseSize(const char* text, size_t* out) {
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (end == text || v < 0) return false;
  double scale = 1;
  switch (*end) {
    case 'k':
    case 'K':
      scale = 1024.0;
      ++end;
      break;
    case 'm':
    case 'M':
      scale = 1024.0 * 1024;
      ++end;
      break;
    case 'g':
    case 'G':
      scale = 1024.0 * 1024 * 1024;
      ++end;
      break;
    default: break;
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end) return false;
  *out = static_cast<size_t>(v * scale);
  return true;
}

std::string sizeText(size_t bytes) {
  char text[32];
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0)
    snprintf(text, sizeof text, "%zuG", bytes >> 30);
  else if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
    snprintf(text, sizeof text, "%zuM", bytes >> 20);
  else if (bytes >= 1024 && bytes % 1024 == 0)
    snprintf(text, sizeof text, "%zuK", bytes >> 10);
  else
    snprintf(text, sizeof text, "%zu", bytes);
  return text;
}

std::vector<std::vector<int>> makeNodes(int n, int perNode) {
  std::vector<std::vector<int>> nodes((n + perNode - 1) / perNode);
  for (int r = 0; r < n; ++r) nodes[r / perNode].push_back(r);
  return nodes;
}

// What the command line asks for.
struct Options {
  bool plan = false;  // plan, else table
  Collective collective = Collective::AllReduce;
  size_t bytes = 0, from = 8, to = size_t(4) << 30, step = 2;
  std::vector<int> rankCounts;
  int perNode = 0, printRank = -1;
  std::string topo, algoName;
  bool direct = false, haveSize = false, simulateToo = false;
};

bool isHelp(const char* arg) { return !std::strcmp(arg, "-h") || !std::strcmp(arg, "--help"); }

// Parses argv into *options; returns -1 to go on, else the exit status (usage or errors printed).
int parseArguments(int argc, char** argv, Options* options) {
  Options& o = *options;
  if (argc < 3 || (std::strcmp(argv[1], "plan") != 0 && std::strcmp(argv[1], "table") != 0) ||
      !parseCollective(argv[2], &o.collective)) {
    usage(argc > 1 && isHelp(argv[1]) ? stdout : stderr);
    return argc > 1 && isHelp(argv[1]) ? 0 : 2;
  }
  o.plan = std::strcmp(argv[1], "plan") == 0;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "weft-info: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--ranks") {
      std::string list = value();
      for (size_t start = 0; start < list.size();) {
        size_t comma = list.find(',', start);
        if (comma == std::string::npos) comma = list.size();
        int n = std::atoi(list.substr(start, comma - start).c_str());
        if (n < 1) {
          std::fprintf(stderr, "weft-info: bad --ranks '%s'\n", list.c_str());
          return 2;
        }
        o.rankCounts.push_back(n);
        start = comma + 1;
      }
    } else if (a == "--ranks-per-node") {
      o.perNode = std::atoi(value());
    } else if (a == "--topo") {
      o.topo = value();
    } else if (a == "--simulate") {
      o.simulateToo = true;
    } else if (a == "--direct") {
      o.direct = true;
    } else if (a == "--print-schedule") {
      o.printRank = std::atoi(value());
    } else if (a == "--algo") {
      o.algoName = value();
    } else if (a == "--step") {
      o.step = static_cast<size_t>(std::atoi(value()));
      if (o.step < 2) {
        std::fprintf(stderr, "weft-info: --step must be at least 2\n");
        return 2;
      }
    } else if (a == "--from" || a == "--to") {
      if (!parseSize(value(), a == "--from" ? &o.from : &o.to)) {
        std::fprintf(stderr, "weft-info: bad size '%s'\n", argv[i]);
        return 2;
      }
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (o.plan && !o.haveSize && parseSize(argv[i], &o.bytes)) {
      o.haveSize = true;
    } else {
      std::fprintf(stderr, "weft-info: unexpected argument '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  if (o.rankCounts.empty() || (o.plan && (!o.haveSize || o.rankCounts.size() != 1))) {
    usage(stderr);
    return 2;
  }
  if (o.collective != Collective::AllReduce && o.simulateToo) {
    std::fprintf(stderr, "weft-info: --simulate is for allreduce\n");
    return 2;
  }
  return -1;
}

// The selection input every row starts from: the cost model from the topology (if any), the
// tuning file and the channel bounds, and the algorithm variables. Prints the links line.
// *untuned (when WEFT_TUNING_FILE is set; else null) gets the same without the tuning file.
bool baseSelection(const Options& o, TopologyModel* model, SelectionInput* base,
                   std::optional<SelectionInput>* untuned) {
  const TopologyModel* modelPtr = nullptr;
  if (!o.topo.empty()) {
    if (loadTopologyFile(o.topo, model) != ncclSuccess) {
      std::fprintf(stderr, "weft-info: %s\n", lastErrorMessage().c_str());
      return false;
    }
    modelPtr = model;
  }
  LinkTable links;
  if (linkTableFromEnv(modelPtr, &links) != ncclSuccess) {
    std::fprintf(stderr, "weft-info: %s\n", lastErrorMessage().c_str());
    return false;
  }
  base->model = costModelFromLinks(links, IntraNodeMedium::Auto, modelPtr);
  applyChannelEnv(&base->model);
  base->directAvailable = o.direct;
  readAlgorithmEnv(base);
  if (auto tuning = settingString(Setting::WeftTuningFile); untuned && tuning && !tuning->empty()) {
    *untuned = *base;
    (*untuned)->model = costModelFromLinks(linkTableFromTopology(modelPtr), IntraNodeMedium::Auto, modelPtr);
    applyChannelEnv(&(*untuned)->model);
  }
  std::printf("# links: intra-node %.3g GB/s %.3g us; NIC %.3g GB/s %.3g us x %d per node%s%s\n",
              base->model.intra.bandwidthGBps, base->model.intra.latencyUs, base->model.nic.bandwidthGBps,
              base->model.nic.latencyUs, base->model.nicsPerNode, o.topo.empty() ? "" : "; topology ",
              o.topo.empty() ? "" : o.topo.c_str());
  return true;
}

// The selection input of one call of `size` bytes on `n` ranks.
SelectionInput inputFor(const Options& o, const SelectionInput& base, int n, size_t size) {
  SelectionInput in = base;
  in.collective = o.collective;
  in.bytes = size;
  in.nranks = n;
  in.nodes = makeNodes(n, o.perNode > 0 ? o.perNode : n);
  return in;
}

// plan --print-schedule: rank printRank's schedule of the chosen algorithm, or of --algo.
int printSchedule(const Options& o, const SelectionInput& in, Algorithm chosen) {
  const Collective collective = o.collective;
  const int n = o.rankCounts[0];
  if (o.printRank >= n) {
    std::fprintf(stderr, "weft-info: --print-schedule %d: only %d ranks\n", o.printRank, n);
    return 2;
  }
  Algorithm algo = chosen;
  if (!o.algoName.empty() && (!parseAlgorithm(o.algoName, &algo) || !algorithmApplies(collective, algo))) {
    std::fprintf(stderr, "weft-info: --algo '%s' is not a %s algorithm (%s)\n", o.algoName.c_str(),
                 collectiveName(collective), algorithmsOf(collective));
    return 2;
  }
  // SIZE counts as nccl-tests does: per-rank blocks for the gathering and scattering ones.
  const bool perRank = sizeCountsEveryRank(collective);
  const CollectiveShape shape{.collective = collective,
                              .count = o.bytes / 4 / (perRank ? static_cast<size_t>(n) : 1),
                              .elementSize = 4,
                              .rank = o.printRank,
                              .nranks = n,
                              .order = {},  // 0..n-1
                              .nodes = in.nodes,
                              .channels = in.model.ringChannels(in.nodes, static_cast<double>(o.bytes))};
  Schedule s = buildCollectiveSchedule(algo, shape);
  std::printf("\nschedule of rank %d, %s, %zu float32%s, root 0 (scratch %zu bytes):\n%s", o.printRank,
              algorithmName(algo), shape.count, perRank ? " per rank" : "", s.scratchBytes, s.toString().c_str());
  return 0;
}

// plan: one row per algorithm of the collective, then the bound, the choice and optionally a
// rank's schedule.
int runPlan(const Options& o, const SelectionInput& base, const std::optional<SelectionInput>& untuned) {
  const Collective collective = o.collective;
  const size_t bytes = o.bytes;
  const int n = o.rankCounts[0];
  SelectionInput in = inputFor(o, base, n, bytes);
  AlgorithmChoice choice;
  if (selectAlgorithm(in, &choice) != ncclSuccess) {
    std::fprintf(stderr, "weft-info: %s\n", lastErrorMessage().c_str());
    return 1;
  }
  const CostInput cost = costInputFor(bytes, n, in.nodes);
  std::printf("%s %s bytes on %d ranks (%zu nodes x %d)\n", collectiveName(collective), sizeText(bytes).c_str(), n,
              in.nodes.size(), o.perNode > 0 ? o.perNode : n);
  if (o.simulateToo && n > 1024) {
    std::fprintf(stderr, "weft-info: --simulate: at most 1024 ranks\n");
    return 2;
  }
  if (o.simulateToo)
    std::printf("%-8s %14s %12s %14s %12s  %s\n", "algo", "time_us", "busbw_GB/s", "sim_us", "sim_busbw", "");
  else
    std::printf("%-8s %14s %12s  %s\n", "algo", "time_us", "busbw_GB/s", "");
  for (const AlgorithmEstimate& e : choice.estimates) {
    if (!algorithmApplies(collective, e.algorithm)) continue;
    std::string notes = e.note;
    if (!e.allowed) notes = std::string("excluded") + (notes.empty() ? "" : "; ") + notes;
    if (e.algorithm == choice.algorithm) notes = "<- chosen" + (notes.empty() ? "" : "; " + notes);
    std::string sim;
    if (o.simulateToo) {
      char text[64] = "             -            -";
      if (e.applicable) {
        SimulatedAllReduce r = simulateAllReduceTime(e.algorithm, bytes, n, in.nodes, in.model);
        if (r.ok)
          snprintf(text, sizeof text, "%14.2f %12.2f", r.timeUs, allReduceBusBandwidthGBps(bytes, n, r.timeUs));
        else
          notes += (notes.empty() ? "" : "; ") + std::string("simulation failed: ") + r.error;
      }
      sim = std::string(" ") + text;
    }
    if (!e.applicable)
      std::printf("%-8s %14s %12s%s  %s\n", algorithmName(e.algorithm), "-", "-", sim.c_str(), notes.c_str());
    else
      std::printf("%-8s %14.2f %12.2f%s  %s\n", algorithmName(e.algorithm), e.timeUs, e.busBandwidthGBps, sim.c_str(),
                  notes.c_str());
  }
  if (collective == Collective::AllReduce) {
    double bound = allReduceLowerBoundUs(cost, in.model);
    std::printf("%-8s %14.2f %12.2f%s  (bandwidth-only lower bound)\n", "bound", bound,
                allReduceBusBandwidthGBps(bytes, n, bound), o.simulateToo ? "              -            -" : "");
  }
  std::printf("chosen: %s (%s)\n", algorithmName(choice.algorithm), choice.reason.c_str());
  if (untuned) {
    // The tuning file's effect: what the defaults would have chosen, priced by each model.
    AlgorithmChoice plain;
    if (selectAlgorithm(inputFor(o, *untuned, n, bytes), &plain) != ncclSuccess) {
      std::fprintf(stderr, "weft-info: %s\n", lastErrorMessage().c_str());
      return 1;
    }
    auto timeOf = [](const AlgorithmChoice& c, Algorithm a) {
      for (const AlgorithmEstimate& e : c.estimates)
        if (e.algorithm == a) return e.timeUs;
      return 0.0;
    };
    std::printf(
        "without WEFT_TUNING_FILE: %s, %.2f us by the default terms (%.2f us by the tuned ones); "
        "tuned: %s, %.2f us\n",
        algorithmName(plain.algorithm), timeOf(plain, plain.algorithm), timeOf(choice, plain.algorithm),
        algorithmName(choice.algorithm), timeOf(choice, choice.algorithm));
  }
  return o.printRank >= 0 ? printSchedule(o, in, choice.algorithm) : 0;
}

// The size where the choice changes from `previous` to another algorithm, between lo and hi, by
// bisection on the predicted times; 0 when a selection fails.
size_t crossover(const Options& o, const SelectionInput& base, int n, Algorithm previous, size_t lo, size_t hi) {
  while (hi - lo > std::max<size_t>(1, lo / 64)) {
    size_t mid = lo + (hi - lo) / 2;
    AlgorithmChoice c;
    if (selectAlgorithm(inputFor(o, base, n, mid), &c) != ncclSuccess) return 0;
    (c.algorithm == previous ? lo : hi) = mid;
  }
  return hi;
}

// table: one block per rank count, one row per size, then the crossovers.
int runTable(const Options& o, const SelectionInput& base) {
  const Collective collective = o.collective;
  const bool allReduce = collective == Collective::AllReduce;
  for (int n : o.rankCounts) {
    int local = o.perNode > 0 ? std::min(o.perNode, n) : n;
    std::printf("\n## %d ranks (%d nodes x %d)\n\n", n, (n + local - 1) / local, local);
    // Columns: the collective's algorithms (those that need mapped buffers, direct, are left out).
    std::vector<Algorithm> columns;
    for (int i = 0; i < kAlgorithmCount; ++i) {
      const auto a = static_cast<Algorithm>(i);
      if (algorithmApplies(collective, a) && !algorithmInfo(a).needsMappedPeers) columns.push_back(a);
    }
    std::printf("|%s size |", allReduce ? "" : (std::string(" ") + collectiveName(collective)).c_str());
    for (Algorithm a : columns) std::printf(" %s |", algorithmName(a));
    std::printf(" chosen |%s\n|---:|", allReduce ? " ceiling |" : "");
    for (size_t c = 0; c < columns.size(); ++c) std::printf("---:|");
    std::printf(":--|%s\n", allReduce ? "---:|" : "");
    Algorithm previous = Algorithm::Count;
    std::vector<std::string> crossovers;
    for (size_t size = o.from; size <= o.to; size *= o.step) {
      SelectionInput in = inputFor(o, base, n, size);
      AlgorithmChoice choice;
      if (selectAlgorithm(in, &choice) != ncclSuccess) {
        std::fprintf(stderr, "weft-info: %s\n", lastErrorMessage().c_str());
        return 1;
      }
      const CostInput cost = costInputFor(size, n, in.nodes);
      std::printf("| %s |", sizeText(size).c_str());
      for (Algorithm a : columns) {
        const AlgorithmEstimate& e = choice.estimates[static_cast<int>(a)];
        std::printf(a == choice.algorithm ? " **%.3g** |" : " %.3g |", e.busBandwidthGBps);
      }
      std::printf(" %s |", algorithmName(choice.algorithm));
      if (allReduce) {
        double bound = allReduceLowerBoundUs(cost, in.model);
        std::printf(" %.3g |", allReduceBusBandwidthGBps(size, n, bound));
      }
      std::printf("\n");
      if (previous != Algorithm::Count && choice.algorithm != previous) {
        const size_t hi = crossover(o, base, n, previous, size / o.step, size);
        if (hi == 0) return 1;
        crossovers.push_back(std::string(algorithmName(previous)) + " -> " + algorithmName(choice.algorithm) + " at ~" +
                             sizeText(hi) + " (" + std::to_string(hi) + " bytes)");
      }
      previous = choice.algorithm;
    }
    std::printf("\ncrossovers:");
    if (crossovers.empty()) std::printf(" none");
    for (auto& c : crossovers) std::printf(" %s;", c.c_str());
    std::printf("\n");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "status") == 0) return statusCommand(argc, argv);
  if (argc > 1 && std::strcmp(argv[1], "trace") == 0) return traceCommand(argc, argv);
  Options options;
  if (const int status = parseArguments(argc, argv, &options); status >= 0) return status;
  TopologyModel model;
  SelectionInput base;
  std::optional<SelectionInput> untuned;
  if (!baseSelection(options, &model, &base, &untuned)) return 1;
  return options.plan ? runPlan(options, base, untuned) : runTable(options, base);
}
