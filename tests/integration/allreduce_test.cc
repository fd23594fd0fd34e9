// ncclAllReduce across rank processes: every type, every op, in and out of place, odd counts
// and counts smaller than the rank count, against a double-precision reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "common/dtype.h"
#include "nccl.h"
#include "tests/support/multiprocess.h"
#include "tests/support/policy_test_name.h"
#include "tests/support/reference.h"

using namespace weft;
using namespace weft::testing;

namespace {

// One rank's part: every type x op x placement x count, reporting mismatches on stderr.
int allReduceGrid(int rank, int nranks, const ncclUniqueId& id, const std::vector<size_t>& counts) {
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) {
    fprintf(stderr, "rank %d: init failed: %s\n", rank, ncclGetLastError(nullptr));
    return 1;
  }
  size_t maxCount = 0;
  for (size_t c : counts) maxCount = std::max(maxCount, c);
  std::vector<char> send(maxCount * 8 + 64), recv(maxCount * 8 + 64);
  size_t failures = 0;
  unsigned seed = 1;
  for (ncclDataType_t type : kAllTypes)
    for (ncclRedOp_t op : kAllOps)
      for (bool inPlace : {false, true})
        for (size_t count : counts) {
          ++seed;
          fillInput(send.data(), count, rank, type, op, seed);
          memset(recv.data(), 0x5a, recv.size());
          void* out = inPlace ? send.data() : recv.data();
          ncclResult_t result = ncclAllReduce(send.data(), out, count, type, op, comm, nullptr);
          char label[128];
          snprintf(label, sizeof(label), "rank %d %s %s %s count %zu", rank, dataTypeName(type), redOpName(op),
                   inPlace ? "in-place" : "out-of-place", count);
          if (result != ncclSuccess) {
            fprintf(stderr, "%s: ncclAllReduce failed: %s\n", label, ncclGetLastError(comm));
            return 2;
          }
          failures += countMismatches(out, count, nranks, type, op, seed, label);
          // Out of place must leave the input alone and write nothing past the end.
          if (!inPlace && count > 0 && static_cast<unsigned char>(recv[count * dataTypeSize(type)]) != 0x5a) {
            fprintf(stderr, "%s: wrote past the end of recvbuff\n", label);
            ++failures;
          }
        }
  ncclCommDestroy(comm);
  return failures == 0 ? 0 : 3;
}

class AllReduceRanks : public ::testing::TestWithParam<int> {};

TEST_P(AllReduceRanks, EveryTypeOpAndPlacementMatchesReference) {
  int nranks = GetParam();
  // Oversubscribed rank counts (more ranks than the 2 cores) get smaller sizes.
  std::vector<size_t> counts = {0, 1, 7, 1003};
  if (nranks <= 4) counts.push_back((1 << 17) + 3);
  auto outcomes = runRankProcesses(
      nranks, [&](int rank, const ncclUniqueId& id) { return allReduceGrid(rank, nranks, id, counts); });
  EXPECT_EQ(describeFailures(outcomes), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, AllReduceRanks, ::testing::Values(1, 2, 3, 4, 8));

// A PreMulSum operator in pieces: each piece scales its own span of the input once (the ring's Scale
// step runs per piece), in and out of place, with a short last piece.
TEST(AllReduceInPieces, ScalarOperatorScalesEveryElementOnce) {
  const int n = 2;
  auto outcomes = runRankProcesses(n, [&](int rank, const ncclUniqueId& id) {
    setenv("WEFT_RING_PIECE_BYTES", "4096", 1);
    ncclComm_t comm;
    if (ncclCommInitRank(&comm, n, id, rank) != ncclSuccess) return 1;
    const size_t count = 10007;  // pieces of 2 x 4 KiB of doubles: 9 whole, and 791 elements
    double scalar = 3.0;
    ncclRedOp_t premul;
    if (ncclRedOpCreatePreMulSum(&premul, &scalar, ncclFloat64, ncclScalarHostImmediate, comm) != ncclSuccess) return 2;
    size_t wrong = 0;
    for (bool inPlace : {false, true}) {
      std::vector<double> send(count), recv(count);
      fillInput(send.data(), count, rank, ncclFloat64, ncclSum, 31);
      double* out = inPlace ? send.data() : recv.data();
      if (ncclAllReduce(send.data(), out, count, ncclFloat64, premul, comm, nullptr) != ncclSuccess) return 3;
      for (size_t i = 0; i < count; ++i) {
        const double want = 3.0 * expectedReduction(n, i, ncclFloat64, ncclSum, 31);
        if (std::fabs(out[i] - want) > 1e-9 * std::fabs(want) + 1e-12) {
          if (wrong++ < 5)
            fprintf(stderr, "rank %d %s element %zu: %g, expected %g\n", rank, inPlace ? "in place" : "out of place", i,
                    out[i], want);
        }
      }
    }
    ncclRedOpDestroy(premul, comm);
    ncclCommDestroy(comm);
    return wrong == 0 ? 0 : 4;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST(AllReduceLarge, TwoRanksSixteenMegabytesAcrossManySlices) {
  const size_t count = (4u << 20) + 5;  // > 64 slices of the default size, plus a ragged end
  auto outcomes = runRankProcesses(2, [&](int rank, const ncclUniqueId& id) {
    ncclComm_t comm;
    if (ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess) return 1;
    std::vector<float> send(count), recv(count);
    fillInput(send.data(), count, rank, ncclFloat32, ncclSum, 99);
    if (ncclAllReduce(send.data(), recv.data(), count, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess) return 2;
    size_t wrong = countMismatches(recv.data(), count, 2, ncclFloat32, ncclSum, 99, "large");
    ncclCommDestroy(comm);
    return wrong == 0 ? 0 : 3;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

}  // namespace

namespace {

// Each all-reduce algorithm forced through WEFT_ALGO (and NCCL_ALGO's syntax), across rank
// processes, against the reference.
class ForcedAlgorithm : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(ForcedAlgorithm, MatchesReference) {
  const char* algorithm = std::get<0>(GetParam());
  const int nranks = std::get<1>(GetParam());
  auto outcomes = runRankProcesses(nranks, [&](int rank, const ncclUniqueId& id) {
    if (!strcmp(algorithm, "NCCL_ALGO=Tree")) {
      setenv("NCCL_ALGO", "Tree", 1);
    } else if (!strcmp(algorithm, "ring x4 channels")) {  // the ring on four channels
      setenv("WEFT_ALGO", "ring", 1);
      setenv("NCCL_MIN_NCHANNELS", "4", 1);
    } else if (!strcmp(algorithm, "ring in pieces")) {
      // Pieces of nranks x 8 KiB, two slices a chunk; two-slot rings, so that a reduction finds
      // the forwarding Send's ring full as often as not (the executor's reduceAndForward then
      // writes the result only, and the Send catches up later).
      setenv("WEFT_ALGO", "ring", 1);
      setenv("WEFT_RING_PIECE_BYTES", "8192", 1);
      setenv("WEFT_SLICE_BYTES", "4096", 1);
      setenv("WEFT_SHM_SLOTS", "2", 1);
      setenv("WEFT_TCP_SLOTS", "2", 1);
    } else {
      setenv("WEFT_ALGO", algorithm, 1);
    }
    // Two fake hosts for 4 and 8 ranks, so that the hierarchical schedule has rails to use.
    if (nranks >= 4) setenv("WEFT_HOSTNAME", rank < nranks / 2 ? "nodeA" : "nodeB", 1);
    ncclComm_t comm;
    if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) return 1;
    size_t wrong = 0;
    unsigned seed = 500;
    for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(1003), size_t(100003)})
      for (ncclRedOp_t op : {ncclSum, ncclMax, ncclAvg})
        for (bool inPlace : {false, true}) {
          std::vector<float> send(count + 1), recv(count + 1);
          fillInput(send.data(), count, rank, ncclFloat32, op, ++seed);
          void* out = inPlace ? static_cast<void*>(send.data()) : recv.data();
          if (ncclAllReduce(send.data(), out, count, ncclFloat32, op, comm, nullptr) != ncclSuccess) {
            fprintf(stderr, "rank %d %s: %s\n", rank, algorithm, ncclGetLastError(comm));
            return 2;
          }
          wrong += countMismatches(out, count, nranks, ncclFloat32, op, seed, algorithm);
        }
    ncclCommDestroy(comm);
    return wrong == 0 ? 0 : 3;
  });
  EXPECT_EQ(describeFailures(outcomes), "");
}

INSTANTIATE_TEST_SUITE_P(Algorithms, ForcedAlgorithm,
                         ::testing::Combine(::testing::Values("ring", "tree", "rhd", "hier", "doubling",
                                                              "NCCL_ALGO=Tree", "ring x4 channels", "ring in pieces"),
                                            ::testing::Values(2, 3, 4, 8)),
                         policyAndRanksName);

// A bad override fails communicator init on every rank (right after bootstrap, so no rank waits
// for another), with a message naming the variable, the bad name and the valid ones.
void expectInitRefuses(const char* variable, const char* value) {
  auto outcomes = runRankProcesses(
      2,
      [&](int rank, const ncclUniqueId& id) {
        setenv(variable, value, 1);
        ncclComm_t comm;
        if (ncclCommInitRank(&comm, 2, id, rank) != ncclInvalidArgument) return 1;
        std::string message = ncclGetLastError(nullptr);
        if (message.find(variable) == std::string::npos || message.find("Spiral") == std::string::npos) return 2;
        return message.find("ring") != std::string::npos || message.find("Ring") != std::string::npos ? 0 : 3;
      },
      30);
  EXPECT_EQ(describeFailures(outcomes), "") << variable << "=" << value;
}

TEST(AlgorithmOverride, UnknownWeftAlgoFailsInitNamingTheValidOnes) { expectInitRefuses("WEFT_ALGO", "Spiral"); }

TEST(AlgorithmOverride, UnknownNcclAlgoFailsInitNamingTheValidOnes) { expectInitRefuses("NCCL_ALGO", "Ring,Spiral"); }

}  // namespace
