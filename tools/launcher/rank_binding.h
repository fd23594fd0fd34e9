// Which CPUs each local rank runs on (weftrun --bind-to). A rank the scheduler may move shares
// a core now and then with the other rank or with a busy process beside the job, and every
// wait on its peer then costs a sleep and a wake-up: 2 ranks beside 2 busy processes took
// 48-73 us per 8-byte all-reduce in 4 runs of 6 unbound, 0.42-0.50 us in 6 of 6 bound
// (docs/performance.md). mpirun binds too (one core each for two ranks). By default each rank
// gets an equal, disjoint block of whole cores among those the launcher may use: one core each
// when there are as many ranks as cores, several each for ranks that run threads of their own
// (a trainer's compute); none when the ranks outnumber the cores.
#ifndef WEFT_TOOLS_LAUNCHER_RANK_BINDING_H_
#define WEFT_TOOLS_LAUNCHER_RANK_BINDING_H_

#include <string>
#include <vector>

namespace weft::launcher {

enum class BindPolicy {
  Auto,  // equal blocks of whole cores; nothing when ranks outnumber cores
  Core,  // one core per rank (mpirun's --bind-to core); an error when ranks outnumber cores
  None,  // leave placement to the scheduler
};

// "auto", "core" or "none"; false for anything else.
bool parseBindPolicy(const std::string& text, BindPolicy* out);

// Pure: the logical CPUs each of `nranks` ranks is bound to, from the usable cores (each the
// list of its logical CPUs, in the machine's order, so that a block stays within a package
// where it can). An empty result binds nothing; with Core and more ranks than cores it is
// empty and *error says why (with no cores, *error keeps what usableCores put there).
std::vector<std::vector<int>> planRankCpus(const std::vector<std::vector<int>>& cores, int nranks, BindPolicy policy,
                                           std::string* error);

// The cores this process may run on (hwloc), each as its logical CPUs that this process's
// binding allows. Empty, with *error, when hwloc cannot tell.
std::vector<std::vector<int>> usableCores(std::string* error);

}  // namespace weft::launcher

#endif  // WEFT_TOOLS_LAUNCHER_RANK_BINDING_H_
