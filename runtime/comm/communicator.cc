#include "runtime/comm/communicator.h"

#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <utility>

#include "algorithms/cost/algorithm_selection.h"
#include "common/deadline.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/settings.h"
#include "common/settings_digest.h"
#include "common/status.h"
#include "common/tls_session.h"
#include "runtime/api/api_call.h"
#include "runtime/comm/init_barrier.h"
#include "runtime/comm/network_rails.h"
#include "runtime/device/device_api.h"
#include "runtime/device/stream_dispatch.h"
#include "runtime/exec/collective_trace.h"
#include "runtime/status/status_server.h"
#include "topology/rank_layout.h"
#include "topology/topology_loader.h"

namespace weft {

namespace {

// The names of the transport table's rows that `keep` accepts, in table order, or "none".
template <class Keep>
std::string transportNames(Keep keep) {
  std::string names;
  for (const TransportEntry& entry : transportTable())
    if (keep(entry)) names += std::string(names.empty() ? "" : ", ") + entry.name;
  return names.empty() ? "none" : names;
}

// WEFT_TRANSPORT=auto|<a row of the transport table>, or NCCL_SHM_DISABLE=1 (tcp): the
// transport forced for same-host peers, or null for the table's order.
ncclResult_t forcedTransportFromEnv(const TransportEntry** out) {
  *out = nullptr;
  // Through the accessor: an invalid value reads as auto here and fails init after bootstrap.
  if (const std::optional<std::string> forced = settingString(Setting::WeftTransport);
      settingText(Setting::WeftTransport)) {
    if (*forced == "auto") return ncclSuccess;
    if ((*out = findTransport(forced->c_str()))) return ncclSuccess;
    const std::string valid = "auto, " + transportNames([](const TransportEntry&) { return true; });
    return fail(ncclInvalidArgument, "WEFT_TRANSPORT=%s: valid values are %s (is weft built with it?)", forced->c_str(),
                valid.c_str());
  }
  if (settingBool(Setting::NcclShmDisable)) *out = findTransport("tcp");
  return ncclSuccess;
}

// WEFT_NET, else NCCL_NET, as the user wrote it: the transport forced for peers on other hosts,
// or null for the table's order.
ncclResult_t chooseNetFromEnv(const TransportEntry** out) {
  std::string name;
  const char* variable = "WEFT_NET";
  if (settingText(Setting::WeftNet)) {
    name = settingString(Setting::WeftNet).value_or("auto");
    if (name == "auto") return ncclSuccess;
  } else if (const std::optional<std::string> nccl = settingString(Setting::NcclNet); nccl && !nccl->empty()) {
    variable = "NCCL_NET";
    if (strcasecmp(nccl->c_str(), "Socket") == 0)
      name = "tcp";
    else if (strcasecmp(nccl->c_str(), "UCX") == 0)
      name = "ucx";
    else if (strcasecmp(nccl->c_str(), "IB") == 0)
      name = "ib";
    else
      return fail(ncclInvalidArgument, "NCCL_NET=%s: valid values are Socket, UCX and IB", nccl->c_str());
  } else {
    return ncclSuccess;
  }
  *out = findTransport(name.c_str());
  if (*out && (*out)->betweenHosts) return ncclSuccess;
  const std::string built = transportNames([](const TransportEntry& entry) { return entry.betweenHosts; });
  return fail(ncclInvalidArgument, "%s asks for the %s transport, which this weft is not built with (it has: %s)",
              variable, name.c_str(), built.c_str());
}

// WEFT_ENCRYPTION=tls: only a transport that runs TLS may reach other hosts. Forced when the
// user chose none, an error naming the variable when the user chose one that cannot.
ncclResult_t restrictNetToEncrypting(const char* variable, const TransportEntry** out) {
  if (!tlsRequested()) return ncclSuccess;
  if (*out && !(*out)->encrypts)
    return fail(ncclInvalidArgument,
                "%s asks for the %s transport between hosts, which cannot encrypt: WEFT_ENCRYPTION=tls needs %s",
                variable, (*out)->name, transportNames([](const TransportEntry& entry) {
                                          return entry.betweenHosts && entry.encrypts;
                                        }).c_str());
  for (const TransportEntry& entry : transportTable())
    if (!*out && entry.betweenHosts && entry.encrypts) *out = &entry;
  return ncclSuccess;
}

// WEFT_NET=auto|ucx|tcp, else NCCL_NET in NCCL's names (Socket, UCX, IB; any case): the
// transport forced for peers on other hosts, or null for the table's order; with
// WEFT_ENCRYPTION=tls, the one that encrypts.
ncclResult_t forcedNetFromEnv(const TransportEntry** out) {
  *out = nullptr;
  WEFT_CHECK(chooseNetFromEnv(out));
  return restrictNetToEncrypting(settingText(Setting::WeftNet) ? "WEFT_NET" : "NCCL_NET", out);
}

// The transports' view of a rank's bootstrap record.
TransportEndpoint endpointOf(const RankInfo& info) {
  TransportEndpoint endpoint;
  endpoint.rank = info.rank;
  endpoint.pid = info.pid;
  endpoint.hostHash = info.hostHash;
  endpoint.shmSegment = info.shmSegment;
  endpoint.dataAddress.length = info.dataAddressLength;
  memcpy(&endpoint.dataAddress.storage, &info.dataAddress, sizeof(endpoint.dataAddress.storage));
  endpoint.offered = info.transportsOffered;
  return endpoint;
}

// The peer handshake listens, every transport of the table listens, and what peers need
// travels in this rank's record.
ncclResult_t listenOnEveryTransport(ncclComm* comm, const SocketAddress& dataAddress, double timeout, RankInfo* mine) {
  TransportEndpoint endpoint = endpointOf(*mine);
  comm->net.handshake = std::make_unique<PeerHandshake>();
  if (comm->net.rails.empty()) {
    WEFT_CHECK(comm->net.handshake->listen(dataAddress, comm->rank, timeout, &endpoint.dataAddress));
  } else {
    std::vector<SocketAddress> where, bound;
    for (const NamedAddress& rail : comm->net.rails) where.push_back(rail.address);
    WEFT_CHECK(comm->net.handshake->listen(where, comm->rank, timeout, &bound));
    endpoint.dataAddress = bound.front();
    publishRails(bound, mine);
    WEFT_INFO(kLogInit | kLogNet, "NET/Socket: %zu rails (NCCL_SOCKET_IFNAME): %s", bound.size(),
              describeRails(comm->net.rails).c_str());
  }
  TransportSetup setup;
  setup.rank = comm->rank;
  setup.nranks = comm->nranks;
  setup.timeoutSeconds = timeout;
  setup.handshake = comm->net.handshake.get();
  for (const NamedAddress& rail : comm->net.rails) setup.railInterfaces.push_back(rail.interfaceName);
  comm->net.transports.clear();
  for (const TransportEntry& entry : transportTable()) {
    comm->net.transports.push_back(entry.create());
    WEFT_CHECK(comm->net.transports.back()->listen(setup, &endpoint));
    if (comm->net.transports.back()->offered()) endpoint.offered |= entry.kind;
  }
  mine->shmSegment = endpoint.shmSegment;
  mine->dataAddressLength = endpoint.dataAddress.length;
  memcpy(&mine->dataAddress, &endpoint.dataAddress.storage, sizeof(mine->dataAddress));
  mine->transportsOffered = endpoint.offered;
  return ncclSuccess;
}

std::string offeredNames(uint32_t offered) {
  return transportNames([offered](const TransportEntry& entry) { return (offered & entry.kind) != 0; });
}

// A transport forced between hosts must be offered by every rank once the ranks span several
// hosts. Every rank reads the same table and reaches the same verdict, naming the same rank, so
// all fail at init rather than some at their first collective.
ncclResult_t checkForcedNetOffered(const ncclComm* comm) {
  const TransportEntry* forced = comm->net.forcedNet;
  const std::vector<RankInfo>& ranks = comm->layout.ranks;
  if (!forced) return ncclSuccess;
  const bool severalHosts =
      std::any_of(ranks.begin(), ranks.end(), [&](const RankInfo& info) { return info.hostHash != ranks[0].hostHash; });
  if (!severalHosts) return ncclSuccess;
  for (const RankInfo& info : ranks)
    if (!(info.transportsOffered & forced->kind))
      return fail(ncclInvalidUsage,
                  "rank %d (host %s) does not offer the %s transport that WEFT_NET/NCCL_NET forces between hosts "
                  "(it offers %s)",
                  info.rank, info.hostName, forced->name, offeredNames(info.transportsOffered).c_str());
  return ncclSuccess;
}

// The row that joins this rank to `peer`: the forced one for its kind of peer, else the first
// that both ranks offer and that can connect them (between hosts, only network transports).
ncclResult_t chooseTransport(ncclComm* comm, const TransportEndpoint& self, const TransportEndpoint& peer,
                             Transport** out) {
  const bool sameHost = self.hostHash == peer.hostHash;
  const TransportEntry* forced = sameHost ? comm->net.forcedTransport : comm->net.forcedNet;
  const std::vector<TransportEntry>& table = transportTable();
  for (size_t i = 0; i < table.size(); ++i) {
    if (forced && forced != &table[i]) continue;
    if (!sameHost && !table[i].betweenHosts) continue;
    if (!(self.offered & peer.offered & table[i].kind)) continue;
    if (comm->net.transports[i]->canConnect(self, peer)) {
      *out = comm->net.transports[i].get();
      return ncclSuccess;
    }
  }
  return fail(ncclSystemError,
              "no transport can connect rank %d to rank %d on %s (%s=%s; this rank offers %s, rank %d "
              "offers %s)",
              self.rank, peer.rank, sameHost ? "the same host" : "another host",
              sameHost ? "WEFT_TRANSPORT" : "WEFT_NET", forced ? forced->name : "auto",
              offeredNames(self.offered).c_str(), peer.rank, offeredNames(peer.offered).c_str());
}

// The machine model is discovered once per process (hwloc takes milliseconds); every
// communicator of the process reads the same one.
ncclResult_t processTopology(const TopologyModel** out) {
  static std::mutex mutex;
  static std::unique_ptr<TopologyModel> model;
  std::lock_guard<std::mutex> lock(mutex);
  if (!model) {
    auto loaded = std::make_unique<TopologyModel>();
    WEFT_CHECK(loadTopology(loaded.get()));
    model = std::move(loaded);
  }
  *out = model.get();
  return ncclSuccess;
}

ncclResult_t describePlacement(ncclComm* comm, RankInfo* mine) {
  const TopologyModel* model = nullptr;
  WEFT_CHECK(processTopology(&model));
  RankPlacement placement = describeThisRank(*model, comm->cudaDevice);
  std::vector<uint8_t> bytes = encodeRankPlacement(placement);
  if (bytes.size() > sizeof(mine->placement))
    return fail(ncclInternalError, "rank placement record of %zu bytes does not fit the bootstrap table (%zu)",
                bytes.size(), sizeof(mine->placement));
  memcpy(mine->placement, bytes.data(), bytes.size());
  mine->placementBytes = static_cast<uint32_t>(bytes.size());
  mine->hostHash = fnv1a(placement.hostId);
  snprintf(mine->hostName, sizeof(mine->hostName), "%s", placement.hostId.c_str());
  return ncclSuccess;
}

// This rank's link terms: its machine's links (NICs from its own topology), then, on rank 0,
// the tuning file's measured terms (WEFT_TUNING_FILE), which every rank then uses
// (agreedLinkTable). A failure is returned to be deferred (below).
struct OwnLinks {
  LinkTable table;
  ncclResult_t result = ncclSuccess;
};

OwnLinks ownLinkTable(int rank) {
  OwnLinks own;
  const TopologyModel* model = nullptr;
  own.result = processTopology(&model);
  if (own.result != ncclSuccess) return own;
  own.table = linkTableFromTopology(model);
  const std::optional<std::string> path = settingString(Setting::WeftTuningFile);
  if (!path || path->empty()) return own;
  if (rank != 0) {
    WEFT_INFO(kLogInit | kLogTune, "WEFT_TUNING_FILE=%s is not read on this rank: every rank uses rank 0's",
              path->c_str());
    return own;
  }
  own.result = applyTuningFile(*path, &own.table);
  if (own.result != ncclSuccess) {
    own.table.tunedMask = LinkTable::kTuningFileFailedBit;
  } else {
    WEFT_INFO(kLogInit | kLogTune, "WEFT_TUNING_FILE=%s: its measured terms are sent to every rank", path->c_str());
  }
  return own;
}

// The first failure of several checks, with its message, returned later.
class DeferredError {
 public:
  void keep(ncclResult_t result) {
    if (result == ncclSuccess || result_ != ncclSuccess) return;
    result_ = result;
    message_ = lastErrorMessage();
  }
  ncclResult_t raise() const { return result_ == ncclSuccess ? ncclSuccess : fail(result_, "%s", message_.c_str()); }

 private:
  ncclResult_t result_ = ncclSuccess;
  std::string message_;
};

LinkTerms linkTermsOf(const LinkTable& table) {
  LinkTerms terms{};
  for (size_t i = 0; i < table.links.size(); ++i) {
    terms.latencyUs[i] = table.links[i].latencyUs;
    terms.bandwidthGBps[i] = table.links[i].bandwidthGBps;
  }
  terms.nicsPerNode = table.nicsPerNode;
  terms.tunedMask = table.tunedMask;
  return terms;
}

LinkTable linkTableOf(const LinkTerms& terms) {
  LinkTable table;
  for (size_t i = 0; i < table.links.size(); ++i) table.links[i] = {terms.latencyUs[i], terms.bandwidthGBps[i]};
  table.nicsPerNode = terms.nicsPerNode;
  table.tunedMask = terms.tunedMask;
  return table;
}

// The cost model the algorithm selection prices schedules with: the slowest of every rank's
// link terms, so that ranks on hosts with other NICs still choose the same algorithm and
// channel count, except what rank 0's tuning file measured (agreedLinkTable). Host-memory
// ranks meet in memory, unless a socket transport is forced between them (the setting is one
// every rank must agree on, so all price alike).
void buildCostModel(ncclComm* comm) {
  std::vector<LinkTable> tables;
  for (const RankInfo& info : comm->layout.ranks) tables.push_back(linkTableOf(info.links));
  const TransportEntry* forced = comm->net.forcedTransport;
  const IntraNodeMedium medium =
      forced && !forced->peersShareMemory ? IntraNodeMedium::Loopback : IntraNodeMedium::Memory;
  comm->layout.costModel = costModelFromLinks(agreedLinkTable(tables), medium);
  applyChannelEnv(&comm->layout.costModel);
}

// Every rank compares every rank's settings digest: the same table gives the same verdict, so
// a difference fails every rank at once.
ncclResult_t checkRanksAgree(const ncclComm* comm) {
  std::vector<const SettingsDigest*> digests;
  for (const RankInfo& info : comm->layout.ranks) digests.push_back(&info.settings);
  return checkSettingsAgree(digests);
}

// The agreed settings that calls read later, read now with the digest that vouches for them.
void readAgreedSettings(ncclComm* comm) {
  comm->agreed.ncclAlgo = settingString(Setting::NcclAlgo);
  comm->agreed.weftAlgo = settingString(Setting::WeftAlgo);
  comm->agreed.direct = settingBool(Setting::WeftDirect);
  comm->agreed.directSendRecv = settingBool(Setting::WeftDirectSendRecv);
  comm->agreed.directMinBytes = settingSize(Setting::WeftDirectMinBytes);
  comm->agreed.oneShotMaxBytes = settingSize(Setting::WeftOneShotMaxBytes);
  comm->agreed.ringPieceBytes = settingSize(Setting::WeftRingPieceBytes);
  comm->agreed.stagingSliceBytes = settingSize(Setting::WeftStagingSliceBytes);
  comm->agreed.ownDeviceBufferBytes = settingSize(Setting::WeftOwnDeviceBufferBytes);
}

// Local ranks and the ring order come from the topology layer's rank layout.
ncclResult_t applyRankLayout(ncclComm* comm) {
  std::vector<RankPlacement> placements(comm->nranks);
  for (int r = 0; r < comm->nranks; ++r) {
    const RankInfo& info = comm->layout.ranks[r];
    if (info.placementBytes > sizeof(info.placement))
      return fail(ncclSystemError, "bootstrap: rank %d sent a placement record of %u bytes", r, info.placementBytes);
    WEFT_CHECK(decodeRankPlacement(info.placement, info.placementBytes, &placements[r]));
  }
  RankLayout layout = computeRankLayout(placements);
  int node = layout.nodeOf[comm->rank];
  comm->layout.nodes = layout.nodes;
  comm->layout.localRanks = layout.nodes[node];
  comm->layout.localRank = layout.localRank[comm->rank];
  comm->layout.localRankOf = layout.localRank;
  comm->layout.ringOrder = layout.ringOrder;
  WEFT_INFO(kLogInit | kLogGraph, "rank layout: %s", describeRankLayout(layout).c_str());
  return ncclSuccess;
}

ncclResult_t validateConfig(const ncclConfig_t* config) {
  if (!config) return ncclSuccess;
  if (config->magic != 0xcafebeef || config->size < offsetof(ncclConfig_t, netName))
    return fail(ncclInvalidArgument, "config: not initialized with NCCL_CONFIG_INITIALIZER (bad magic or size)");
  if (config->blocking != NCCL_CONFIG_UNDEF_INT && config->blocking != 0 && config->blocking != 1)
    return fail(ncclInvalidArgument, "config->blocking=%d: must be 0 or 1", config->blocking);
  return ncclSuccess;
}

ncclResult_t bootstrapCommunicator(ncclComm* comm, const ncclUniqueId& id, const LinkTable& links) {
  double timeout = settingDouble(Setting::WeftTimeout);
  UniqueIdContents contents;
  WEFT_CHECK(decodeUniqueId(id, &contents));
  if (contents.rootAtRankZero && comm->rank == 0) {
    SocketAddress bound;
    WEFT_CHECK(startBootstrapRoot(contents.root, contents.secret, &bound));
  }
  int rootFd = -1;
  SocketAddress local;
  WEFT_CHECK(connectToRoot(contents, timeout, &rootFd, &local));
  CloseSocketOnExit closer{rootFd};

  // Data listeners go where the root was reachable from, unless NCCL_SOCKET_IFNAME says otherwise
  // (several interfaces: one listener on each, network_rails.h).
  SocketAddress dataAddress = local;
  if (settingText(Setting::NcclSocketIfname)) {
    std::vector<NamedAddress> interfaces;
    WEFT_CHECK(findInterfaceAddresses(&interfaces));
    dataAddress = interfaces.front().address;
    comm->net.rails = railsAmong(std::move(interfaces));
    if (!comm->net.rails.empty()) dataAddress = comm->net.rails.front().address;
  }

  RankInfo mine{};
  mine.rank = comm->rank;
  mine.pid = getpid();
  mine.cudaDevice = comm->cudaDevice;
  WEFT_CHECK(describePlacement(comm, &mine));
  // The communicator's key is only known after bootstrap; listeners are opened now so that
  // their addresses can travel in the table, and the key is set before any peer can use it.
  WEFT_CHECK(listenOnEveryTransport(comm, dataAddress, timeout, &mine));
  WEFT_CHECK(statusServerListen(comm, dataAddress, &mine.statusPort));
  mine.settings = digestAgreedSettings();
  mine.links = linkTermsOf(links);
  // The NICs TCP spreads over are the node's NICs for the channel count, unless measured.
  if (comm->net.rails.size() > 1 && !(links.tunedMask & LinkTable::kNicsBit))
    mine.links.nicsPerNode = static_cast<int32_t>(comm->net.rails.size());

  BootstrapResult result;
  WEFT_CHECK(exchangeRankInfo(rootFd, contents, comm->nranks, mine, timeout, &result));
  comm->layout.ranks = std::move(result.ranks);
  memcpy(comm->layout.commToken, result.commToken, sizeof(comm->layout.commToken));
  comm->exec.traceId =
      fnv1a(std::string_view(reinterpret_cast<const char*>(comm->layout.commToken), sizeof(comm->layout.commToken)));
  comm->exec.metrics = CollectiveMetrics::fromEnv(comm->rank, comm->nranks, comm->exec.traceId);
  comm->net.handshake->setKey(result.commKey);
  return ncclSuccess;
}

}  // namespace

ncclResult_t newCommunicator(int nranks, int rank, const ncclConfig_t* config, ncclComm** out) {
  WEFT_CHECK(validateConfig(config));
  auto comm = std::make_unique<ncclComm>();
  comm->rank = rank;
  comm->nranks = nranks;
  ncclConfig_t defaults = NCCL_CONFIG_INITIALIZER;
  comm->config = defaults;
  if (config) memcpy(&comm->config, config, std::min(sizeof(ncclConfig_t), config->size));
  comm->config.size = sizeof(ncclConfig_t);
  // A bad value of a rank-local setting fails here; agreed ones are checked after bootstrap.
  WEFT_CHECK(validateSettings(SettingsToValidate::RankLocal));
  comm->exec.records = CollectiveRecordRing(static_cast<size_t>(settingInt(Setting::WeftRecordEntries)));
  WEFT_CHECK(forcedTransportFromEnv(&comm->net.forcedTransport));
  WEFT_CHECK(forcedNetFromEnv(&comm->net.forcedNet));
  if (const char* plugin = settingText(Setting::NcclNetPlugin); plugin && *plugin)
    WEFT_WARN("NCCL_NET_PLUGIN=%s: net plugins are not supported yet; weft uses its own transports", plugin);
  *out = comm.release();
  return ncclSuccess;
}

// initializeCommunicator's work; the caller makes its waits abortable.
static ncclResult_t initializeCommunicatorSteps(ncclComm* comm, const ncclUniqueId& id) {
  const int rank = comm->rank;
  const int nranks = comm->nranks;
  setLogRank(rank);
  // Values of agreed settings are checked now but fail only after bootstrap: a value that one
  // rank alone has fails every rank through the settings check, and one that every rank has
  // fails them all alike; failing here would leave the other ranks waiting for this one.
  DeferredError deferred;
  deferred.keep(validateSettings(SettingsToValidate::Agreed));
  deferred.keep(compressionConfigFromEnv(&comm->compression.env));
  deferred.keep(checkAlgorithmEnv());
  readAgreedSettings(comm);
  const OwnLinks links = ownLinkTable(rank);
  deferred.keep(links.result);
  WEFT_CHECK(bootstrapCommunicator(comm, id, links.table));
  WEFT_CHECK(checkRanksAgree(comm));
  WEFT_CHECK(deferred.raise());
  if (comm->layout.ranks[0].links.tunedMask & LinkTable::kTuningFileFailedBit)
    return fail(ncclInvalidArgument,
                "rank %d: rank 0's WEFT_TUNING_FILE could not be used (rank 0 reports why), and every rank uses "
                "rank 0's",
                rank);
  WEFT_CHECK(checkForcedNetOffered(comm));

  const RankInfo& me = comm->layout.ranks[rank];
  WEFT_CHECK(applyRankLayout(comm));
  buildCostModel(comm);
  comm->net.connections.resize(nranks);
  comm->net.connectionTable.assign(nranks, nullptr);
  comm->net.sliceBytes = settingSize(Setting::WeftSliceBytes);
  for (const auto& transport : comm->net.transports)
    comm->net.sliceBytes = std::min(comm->net.sliceBytes, transport->maxMessageBytes());
  comm->net.sliceBytes -= comm->net.sliceBytes % 64;
  // Every setting that bounds a slice is at least 4096; a transport whose messages are smaller
  // than one 64-byte line is a defect of that transport, not of the user's settings.
  if (comm->net.sliceBytes == 0)
    return fail(ncclInternalError, "a transport's largest message is below 64 bytes; no slice fits");

  WEFT_INFO(kLogInit, "comm %p rank %d nranks %d localRank %d localSize %zu host %s pid %d", (void*)comm, rank, nranks,
            comm->layout.localRank, comm->layout.localRanks.size(), me.hostName, me.pid);
  if (!comm->net.rails.empty()) {
    const size_t rail = static_cast<size_t>(comm->layout.localRank) % comm->net.rails.size();
    WEFT_INFO(kLogInit | kLogNet,
              "NET/Socket: local rank %d: ranks on other hosts join this rank through %s (rail %zu of %zu)",
              comm->layout.localRank, comm->net.rails[rail].interfaceName.c_str(), rail, comm->net.rails.size());
  }

  // Ring neighbours are connected now, so that the first collective pays no set-up cost, and
  // the ranks pass the end of initialization together (runtime/comm/init_barrier.h).
  if (nranks > 1) {
    auto position =
        std::find(comm->layout.ringOrder.begin(), comm->layout.ringOrder.end(), rank) - comm->layout.ringOrder.begin();
    int next = comm->layout.ringOrder[(position + 1) % nranks];
    int prev = comm->layout.ringOrder[(position + nranks - 1) % nranks];
    WEFT_CHECK(connectPeers(comm, {prev, next}));
    WEFT_CHECK(finishInitializationTogether(comm, prev, next, Deadline::after(settingDouble(Setting::WeftTimeout))));
  }
  return ncclSuccess;
}

// A wait that ncclCommAbort cut short says so, rather than blaming a peer or the time-out.
static ncclResult_t explainIfAborted(ncclComm* comm, ncclResult_t result, const char* during) {
  if (result == ncclSuccess || !comm->state.aborted.load(std::memory_order_acquire)) return result;
  return fail(ncclInvalidUsage, "rank %d: the communicator was aborted (ncclCommAbort) during %s", comm->rank, during);
}

ncclResult_t initializeCommunicator(ncclComm* comm, const ncclUniqueId& id) {
  CancelScope abortable(&comm->state.aborted);
  WEFT_CHECK(explainIfAborted(comm, initializeCommunicatorSteps(comm, id), "its initialization"));
  statusServerAdd(comm);  // `weft-info status` sees it from now on
  return ncclSuccess;
}

ncclResult_t initRank(ncclComm_t* comm, int nranks, const ncclUniqueId& commId, int rank, const ncclConfig_t* config,
                      int cudaDevice) {
  ncclComm* created = nullptr;
  WEFT_CHECK(newCommunicator(nranks, rank, config, &created));
  // ncclCommCuDevice reports it; the communicator's stream work and progress thread use it.
  created->cudaDevice = cudaDevice == kDeviceOfCaller ? currentDeviceOrNone() : cudaDevice;
  if (created->config.blocking == 0) {
    // Non-blocking: hand the communicator back now; ncclCommGetAsyncError says ncclInProgress
    // until the initialization running in the background is done.
    created->state.asyncError.store(ncclInProgress);
    *comm = created;
    created->state.initThread = std::thread([created, commId] {
      // On its own thread an exception would abort the process: it becomes the init's error.
      ncclResult_t result = apiCall("ncclCommInitRankConfig", [&] { return initializeCommunicator(created, commId); });
      if (result != ncclSuccess) {
        std::lock_guard<std::mutex> lock(created->state.errorMutex);
        created->state.lastError = lastErrorMessage();
      }
      created->state.asyncError.store(result);
    });
    return ncclInProgress;
  }
  ncclResult_t result = initializeCommunicator(created, commId);
  if (result != ncclSuccess) {
    destroyCommunicator(created);
    *comm = nullptr;
    return result;
  }
  *comm = created;
  return ncclSuccess;
}

void finishNonBlockingInit(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(comm->state.initMutex);
  if (comm->state.initThread.joinable()) comm->state.initThread.join();
}

ncclResult_t connectPeers(ncclComm* comm, const std::vector<int>& peers) {
  CancelScope abortable(&comm->state.aborted);
  // Each set-up blocks until the peer takes part, so ranks must meet their peers in an order
  // that cannot wait in a circle: ascending ranks. Every rank then handles its pairs in one
  // global order (by higher rank, then lower). In the order given, 3 ranks on 3 hosts
  // deadlocked: 0 set up with 2 (its prev) while 2 waited for 1 and 1 waited for 0.
  std::vector<int> ascending = peers;
  std::sort(ascending.begin(), ascending.end());
  for (int peer : ascending) {
    if (peer == comm->rank || comm->net.connections[peer]) continue;
    const TransportEndpoint self = endpointOf(comm->layout.ranks[comm->rank]);
    TransportEndpoint other = endpointOf(comm->layout.ranks[peer]);
    // The lower rank of a pair joins the higher one's listener (transport/peer_handshake.h), on
    // another host through the higher one's rail (network_rails.h): the pair's NICs.
    int rail = -1;
    SocketAddress railAddress;
    if (other.hostHash != self.hostHash) {
      const int listener = std::max(comm->rank, peer);
      other.railLocalRank = comm->layout.localRankOf[listener];
      railAddress = joinAddressOf(comm->layout.ranks[listener], other.railLocalRank, &rail);
      other.rail = rail;
      if (listener == peer) other.dataAddress = railAddress;
    }
    Transport* transport = nullptr;
    WEFT_CHECK(chooseTransport(comm, self, other, &transport));
    std::unique_ptr<Connection> connection;
    WEFT_CHECK(explainIfAborted(comm, transport->connect(other, &connection), "connection set-up"));
    const std::string where = self.hostHash == other.hostHash
                                  ? std::string("same host")
                                  : std::string("host ") + comm->layout.ranks[peer].hostName;
    // Verbs picks its port by the same rail but numbers ports, not NICs: it reports no dataRail.
    const bool railCarriesData = rail >= 0 && connection->dataRail() == rail;
    const std::string through =
        railCarriesData ? ", rail " + std::to_string(rail) + " at " + railAddress.toString() : std::string();
    WEFT_INFO(kLogInit | kLogP2p | kLogNet, "Channel 00 : %d[%d] -> %d[%d] via %s (%s%s)", comm->rank, comm->rank, peer,
              peer, connection->transportName(), where.c_str(), through.c_str());
    comm->net.connectionTable[peer] = connection.get();
    comm->net.connections[peer] = std::move(connection);
  }
  return ncclSuccess;
}

void destroyCommunicator(ncclComm* comm) {
  if (!comm) return;
  finishNonBlockingInit(comm);
  if (!stopStreamWork(comm)) return;  // a stream still holds its batches: leaked, never freed under it
  if (flushCollectiveTrace() != ncclSuccess) WEFT_WARN("WEFT_TRACE: %s", lastErrorMessage().c_str());
  if (comm->exec.metrics && comm->exec.metrics->write() != ncclSuccess)
    WEFT_WARN("WEFT_METRICS_FILE: %s", lastErrorMessage().c_str());
  statusServerRemove(comm);
  comm->magic = 0;
  // Its pinned memory is freed on its own device. Only a communicator with stream work has any:
  // making a device current creates its context (CUDA 12), which host-only jobs must not pay for.
  CurrentDeviceScope onDevice(comm->device.queue ? comm->cudaDevice : -1);
  releaseDeviceDirectState(comm);  // the streams have released every batch: nothing waits on the device
  delete comm;
}

bool abortCommunicator(ncclComm* comm) {
  // The flag first: a non-blocking initialization and every call in flight see it within one
  // poll interval (their waits are cancelled, the run loop checks it every pass), so joining
  // the initialization and waiting for the calls below take milliseconds, not WEFT_TIMEOUT.
  comm->state.aborted.store(true, std::memory_order_release);
  wakeStreamWork(comm);  // batches waiting for their streams complete unrun, releasing the streams
  finishNonBlockingInit(comm);
  for (auto& transport : comm->net.transports) transport->markAborted();
  // Nothing may be freed under a call still running; one that has not left by the time-out is
  // stuck outside weft's waits, and the communicator is then left allocated (leaked) instead.
  const Deadline deadline = Deadline::after(settingDouble(Setting::WeftTimeout));
  while (comm->state.activeCalls.load(std::memory_order_acquire) > 0) {
    if (deadline.expired()) {
      WEFT_WARN("ncclCommAbort: %d call(s) still running on rank %d after WEFT_TIMEOUT; the communicator is leaked",
                comm->state.activeCalls.load(), comm->rank);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

Doorbell* communicatorDoorbell(ncclComm* comm) {
  for (auto& transport : comm->net.transports)
    if (Doorbell* doorbell = transport->doorbell()) return doorbell;
  return nullptr;
}

bool sameHostPeersShareMemory(const ncclComm* comm) {
  return !comm->net.forcedTransport || comm->net.forcedTransport->peersShareMemory;
}

bool allRanksOnOneHost(const ncclComm* comm) {
  return static_cast<int>(comm->layout.localRanks.size()) == comm->nranks;
}

int ranksWithADevice(const ncclComm* comm) {
  return static_cast<int>(std::count_if(comm->layout.ranks.begin(), comm->layout.ranks.end(),
                                        [](const RankInfo& rank) { return rank.cudaDevice >= 0; }));
}

ncclResult_t checkCommunicator(ncclComm* comm, const char* argumentName) {
  if (!comm) return fail(ncclInvalidArgument, "%s is NULL", argumentName);
  if (comm->magic != kCommMagic)
    return fail(ncclInvalidArgument, "%s does not point to a live communicator (destroyed or corrupt)", argumentName);
  // A non-blocking communicator still initializing: wait for it rather than race it.
  if (comm->state.asyncError.load(std::memory_order_acquire) == ncclInProgress) finishNonBlockingInit(comm);
  if (comm->state.aborted.load(std::memory_order_acquire))
    return fail(ncclInvalidUsage, "%s was aborted (ncclCommAbort) and can only be destroyed", argumentName);
  if (comm->state.revoked.load(std::memory_order_acquire))
    return fail(ncclInvalidUsage, "%s was revoked (ncclCommRevoke): only destroy, split and shrink are allowed",
                argumentName);
  int error = comm->state.asyncError.load(std::memory_order_acquire);
  if (error != ncclSuccess && error != ncclInProgress) {
    std::lock_guard<std::mutex> lock(comm->state.errorMutex);
    return fail(static_cast<ncclResult_t>(error), "%s failed earlier and cannot be used: %s", argumentName,
                comm->state.lastError.c_str());
  }
  return ncclSuccess;
}

double communicatorTimeout(const ncclComm* comm) {
  const double own = comm->state.timeoutSeconds.load(std::memory_order_relaxed);
  return own > 0 ? own : settingDouble(Setting::WeftTimeout);
}

void setCommunicatorError(ncclComm* comm, ncclResult_t result) {
  if (result == ncclSuccess || result == ncclInProgress) return;
  const std::string error = lastErrorMessage();
  {
    std::lock_guard<std::mutex> lock(comm->state.errorMutex);
    comm->state.lastError = error;
  }
  int expected = ncclSuccess;
  if (!comm->state.asyncError.compare_exchange_strong(expected, result)) return;
  // The first error: peers waiting on this rank's part of a call learn it now, not at their
  // time-out (a rank that waits on a survivor of a dead peer, not on the dead one).
  for (auto& connection : comm->net.connections)
    if (connection) connection->markFailed(error);
  restoreLastError(error);  // telling a peer may fail (a closed socket) and must not replace it
}

}  // namespace weft
