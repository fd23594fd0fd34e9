// The communicator: what a rank knows after bootstrap (every rank's RankInfo, which ranks
// share its host, the ring order), its transports and per-peer connections, its error state,
// and the schedules it has prepared. `struct ncclComm` is the type behind ncclComm_t.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/cost/cost_model.h"
#include "nccl.h"
#include "runtime/comm/bootstrap.h"
#include "runtime/comm/compression_config.h"
#include "runtime/comm/reduction_ops.h"
#include "runtime/device/stream_queue.h"
#include "runtime/exec/collective_metrics.h"
#include "runtime/exec/collective_progress.h"
#include "runtime/exec/collective_trace.h"
#include "runtime/exec/direct_path.h"
#include "runtime/exec/executor.h"
#include "runtime/exec/one_shot.h"
#include "runtime/exec/plan_cache.h"
#include "transport/transport_table.h"

namespace weft {

// A buffer registered with ncclCommRegister or ncclCommWindowRegister; the handle is its address.
struct RegisteredRegion {
  void* buffer;
  size_t bytes;
  bool window;
};

constexpr uint64_t kCommMagic = 0x7765667443304d4dull;  // "weftC0MM"

// What bootstrap and topology taught this rank about everyone; read by schedule choice,
// algorithm builders and the derive calls (split, shrink, grow).
struct CommLayout {
  std::vector<RankInfo> ranks;
  std::vector<int> localRanks;  // ranks on this host, ascending (from topology's RankLayout)
  int localRank = 0;
  std::vector<int> localRankOf;         // per rank: its place among its host's ranks
  std::vector<int> ringOrder;           // node-major: a node's ranks adjacent, each boundary crossed once
  std::vector<std::vector<int>> nodes;  // ranks of each host, from topology's RankLayout
  CostModel costModel;                  // alpha-beta terms of this communicator's links
  uint64_t commToken[2]{};
};

// Settings that calls read after init, read once with the others that shape schedules and
// checked at init to be equal on every rank (common/settings_digest.h); a setenv on one rank
// after init cannot make the ranks build different schedules.
struct CommAgreedSettings {
  std::optional<std::string> ncclAlgo;  // NCCL_ALGO
  std::optional<std::string> weftAlgo;  // WEFT_ALGO
  bool direct = true;                   // WEFT_DIRECT
  bool directSendRecv = true;           // WEFT_DIRECT_SEND_RECV (runtime/exec/direct_point_to_point.h)
  size_t directMinBytes = 0;            // WEFT_DIRECT_MIN_BYTES
  size_t oneShotMaxBytes = 0;           // WEFT_ONE_SHOT_MAX_BYTES
  size_t ringPieceBytes = 0;            // WEFT_RING_PIECE_BYTES
  size_t stagingSliceBytes = 0;         // WEFT_STAGING_SLICE_BYTES
  size_t ownDeviceBufferBytes = 0;      // WEFT_OWN_DEVICE_BUFFER_BYTES (runtime/exec/direct_path.h)
};

// The transports and per-peer connections; built at init and by connectPeers, driven by the
// executor and the idle waiter.
struct CommConnections {
  // Where network transports meet their peers; outlives the transports, which point to it.
  std::unique_ptr<PeerHandshake> handshake;
  // NCCL_SOCKET_IFNAME's interfaces when it names several: the handshake listens on each, and
  // ranks on other hosts join this rank through its rail's (runtime/comm/network_rails.h).
  std::vector<NamedAddress> rails;
  // One instance per row of transport/transport_table.h, in the table's order. A peer is
  // reached through the first row that both ranks offer and that can connect to it, or
  // through the row forced for its kind of peer: on this host WEFT_TRANSPORT (NCCL_SHM_DISABLE=1
  // means tcp), on other hosts WEFT_NET or NCCL_NET; null: auto.
  std::vector<std::unique_ptr<Transport>> transports;
  const TransportEntry* forcedTransport = nullptr;
  const TransportEntry* forcedNet = nullptr;
  std::vector<std::unique_ptr<Connection>> connections;  // by peer rank, null until used
  std::vector<Connection*> connectionTable;              // raw view for the executor
  size_t sliceBytes = 0;
  int statusListenFd = -1;  // where ranks on other hosts ask this one's status (runtime/status), or -1
};

// Life cycle and error state: non-blocking init, abort/revoke, calls in flight, the stored
// error; read by every entry point through checkCommunicator.
struct CommState {
  std::atomic<int> asyncError{ncclSuccess};  // ncclInProgress while a non-blocking init runs
  std::atomic<bool> aborted{false};
  std::atomic<bool> revoked{false};
  std::mutex initMutex;
  std::thread initThread;  // a non-blocking (config.blocking = 0) initialization
  std::atomic<int> activeCalls{0};
  std::atomic<double> timeoutSeconds{0};  // weftCommSetTimeout; 0: WEFT_TIMEOUT
  uint64_t shrinks = 0;                   // ncclCommShrink calls on this communicator so far (shrink_rendezvous.h)
  std::mutex errorMutex;
  std::string lastError;
};

// What the collective calls reuse from call to call: sequence numbers, prepared schedules and
// their scratch memory; owned by runtime/exec.
struct CommExecution {
  uint64_t collectiveSequence = 0;
  PlanCache planCache;                         // prepared schedules by shape (runtime/exec/plan_cache.h)
  std::vector<char> scratch;                   // schedules' Scratch buffer: grown when needed, never per call
  CollectiveRecordRing records;                // WEFT_RECORD_ENTRIES: the last collectives (collective_record.h)
  uint64_t traceId = 0;                        // names this communicator's track in WEFT_TRACE (a hash of its token)
  std::unique_ptr<CollectiveMetrics> metrics;  // statistics, WEFT_METRICS_FILE (collective_metrics.h); set at init
  CollectiveProgress progress;                 // where the collectives stand, for the status server
  std::atomic<bool> dumpRequested{false};      // the status server asks for a record dump (status_server.h)
  std::vector<uint64_t> traceStepStamps;       // WEFT_TRACE: the running collective's step times
  TraceClock traceClock;                       // WEFT_TRACE: this rank's clock against rank 0's
  OneShotState oneShot;                        // small all-reduces through mailboxes (runtime/exec/one_shot.h)
};

// Buffers registered through ncclCommRegister / ncclCommWindowRegister (runtime/api).
struct CommRegistrations {
  std::mutex mutex;
  std::vector<std::unique_ptr<RegisteredRegion>> regions;
};

// Direct all-reduce on shared buffers (runtime/exec/direct_path.h): the descriptor table every
// rank fills before a large call, the exchange's plan, and the peers' buffers mapped here.
struct DirectPathState {
  std::vector<DirectDescriptor> descriptors;
  PreparedSchedule handshakePlan;
  PeerBufferMapper peerBuffers;
  std::vector<char*> peerSendBuffers;
  std::vector<char*> peerRecvBuffers;
  // Peers' device allocations mapped (DeviceApi::importDeviceBuffer), by their ticket's secret:
  // kept for later calls, released when the communicator is destroyed (direct_path.h).
  struct DeviceImport {
    DeviceBufferExport buffer;
    char* base;  // the allocation's address here
  };
  std::map<std::pair<uint64_t, uint64_t>, DeviceImport> deviceImports;
  // This rank's own device buffers, for calls on memory it cannot export (cudaMalloc's): a
  // send and a receive area in one allocation peers map once. Grown by doubling; earlier ones
  // are kept until the communicator goes (peers may hold them mapped, freeing may synchronize).
  struct OwnDeviceBuffers {
    char* base = nullptr;
    size_t areaBytes = 0;
    DeviceBufferExport exported;  // of the whole allocation
  };
  OwnDeviceBuffers ownDevice;
  std::vector<char*> retiredOwnDevice;
  // A call whose result is still in a receive area (`resultArea`), copied out before the next
  // call reuses the areas, or at the batch's end.
  const CollectiveCall* resultInOwnBuffers = nullptr;
  const char* resultArea = nullptr;
  // Own device buffers could not be made or exported: such calls are staged from then on.
  bool ownBuffersUnusable = false;
  bool warnedUnmappable = false;             // a peer's device buffers could not be mapped (said once)
  bool announcedDevicePath = false;          // the first direct call on device buffers (logged)
  bool announcedDevicePointToPoint = false;  // ... and sends and receives (direct_point_to_point.h)
};

// Calls on device memory (runtime/device): the queue of stream-ordered batches and its
// progress thread, made by the first such call.
struct CommDeviceWork {
  std::mutex mutex;
  std::unique_ptr<StreamQueue> queue;
};

}  // namespace weft

struct ncclComm {
  // Identity: NCCL's own notions, read everywhere.
  uint64_t magic = weft::kCommMagic;
  int rank = 0;
  int nranks = 0;
  int cudaDevice = -1;
  ncclConfig_t config{};

  weft::CommLayout layout;
  weft::CommAgreedSettings agreed;
  weft::CommConnections net;
  weft::CommState state;
  weft::CommExecution exec;
  weft::CommRegistrations registered;
  std::vector<weft::PreMulSumOp> preMulSumOps;  // ncclRedOpCreatePreMulSum's table
  weft::DirectPathState direct;
  weft::CommDeviceWork device;

  // Compressed all-reduce (runtime/comm/compression_config.h): WEFT_COMPRESSION, codecs,
  // per-buffer error-feedback residuals (its schedules are in exec.planCache).
  weft::CommCompression compression;
};

namespace weft {

// A communicator object with its configuration, not yet connected to anyone.
ncclResult_t newCommunicator(int nranks, int rank, const ncclConfig_t* config, ncclComm** out);
// Bootstrap, topology layout, transports and ring-neighbour connections for one rank.
ncclResult_t initializeCommunicator(ncclComm* comm, const ncclUniqueId& id);
// ncclCommInitRankConfig's work: blocking, or (config->blocking == 0) in the background,
// returning ncclInProgress. The communicator's CUDA device is `cudaDevice` (-1: none), or the
// one current on the calling thread (kDeviceOfCaller), as NCCL records it.
constexpr int kDeviceOfCaller = -2;
ncclResult_t initRank(ncclComm_t* comm, int nranks, const ncclUniqueId& commId, int rank, const ncclConfig_t* config,
                      int cudaDevice = kDeviceOfCaller);
// Waits for a non-blocking initialization, if one is running.
void finishNonBlockingInit(ncclComm* comm);
void destroyCommunicator(ncclComm* comm);
// Stops everything the communicator is doing; peers waiting on it get an error, and its own
// calls in flight return one. True once none is left running (the communicator may be freed);
// false when one was still running at WEFT_TIMEOUT (it must then never be freed).
bool abortCommunicator(ncclComm* comm);

// Connects to every rank in `peers` not yet connected (both ranks of each pair must ask).
ncclResult_t connectPeers(ncclComm* comm, const std::vector<int>& peers);
// What this rank sleeps on while its connections are quiet (shared memory's), or null.
Doorbell* communicatorDoorbell(ncclComm* comm);
// Whether same-host peers are joined by a transport through which they can map each other's
// buffers (not when WEFT_TRANSPORT forces the network): the direct path needs it.
bool sameHostPeersShareMemory(const ncclComm* comm);
// Every rank on this host. From the layout, so the same verdict on every rank.
bool allRanksOnOneHost(const ncclComm* comm);
// The ranks that had a CUDA device current when they created the communicator (from the init
// exchange, so the same count on every rank).
int ranksWithADevice(const ncclComm* comm);

// ncclInvalidArgument unless `comm` is a live weft communicator; the stored error if it failed.
ncclResult_t checkCommunicator(ncclComm* comm, const char* argumentName = "comm");
// How long the communicator's calls may wait without progress: weftCommSetTimeout's value,
// else WEFT_TIMEOUT.
double communicatorTimeout(const ncclComm* comm);
// Records an asynchronous error (the communicator is unusable afterwards).
void setCommunicatorError(ncclComm* comm, ncclResult_t result);

}  // namespace weft
