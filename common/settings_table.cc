// The declaration of every setting weft's library reads (see common/settings.h). The README's
// environment table is checked against these rows by tests/unit/settings_readme_test.cc.
#include <array>

#include "common/settings.h"
#include "common/settings_digest.h"

namespace weft {
namespace {

using enum SettingType;
constexpr double kGiB = 1 << 30;
constexpr double kNoLimit = 4.0 * (1ull << 60);  // exact as a double, far beyond any buffer

constexpr std::array<SettingSpec, static_cast<size_t>(Setting::Count)> kSettings{{
    // id, name, type, default, low, high, multipleOf, values, ranksMustAgree, lenient, description
    {Setting::NcclDebug, "NCCL_DEBUG", Enum, nullptr, 0, 0, 0, "VERSION|WARN|INFO|TRACE|ABORT", false, true,
     "log level; lines carry host, pid, thread and rank"},
    {Setting::NcclDebugSubsys, "NCCL_DEBUG_SUBSYS", String, "INIT,ENV", 0, 0, 0, nullptr, false, true,
     "subsystems to log (INIT,COLL,P2P,SHM,NET,GRAPH,TUNING,ENV,...,ALL); ^ excludes"},
    {Setting::NcclDebugFile, "NCCL_DEBUG_FILE", String, nullptr, 0, 0, 0, nullptr, false, true,
     "log file instead of stderr; %h is the host, %p the pid"},
    {Setting::NcclCommId, "NCCL_COMM_ID", String, nullptr, 0, 0, 0, nullptr, false, false,
     "host:port of the bootstrap root (rank 0 hosts it)"},
    {Setting::NcclSocketIfname, "NCCL_SOCKET_IFNAME", String, nullptr, 0, 0, 0, nullptr, false, false,
     "interfaces for bootstrap and TCP: prefixes, ^ excludes, = exact names"},
    {Setting::NcclSocketFamily, "NCCL_SOCKET_FAMILY", Enum, nullptr, 0, 0, 0, "AF_INET|AF_INET6", false, false,
     "address family for bootstrap and TCP (default: IPv4 first, then IPv6)"},
    {Setting::WeftSecret, "WEFT_SECRET", String, nullptr, 0, 0, 0, nullptr, false, false,
     "the bootstrap secret of ids built from the environment (weftrun sets it)"},
    {Setting::WeftAuth, "WEFT_AUTH", Enum, "auto", 0, 0, 0, "auto|required", false, false,
     "required: a bootstrap secret computed from public data (NCCL_COMM_ID or MASTER_ADDR without "
     "WEFT_SECRET) is an error instead of a warning"},
    {Setting::WeftEncryption, "WEFT_ENCRYPTION", Enum, "none", 0, 0, 0, "none|tls", true, false,
     "tls: the bootstrap and TCP between ranks run TLS 1.3 (keyed from the job secret, or WEFT_TLS_*); UCX and "
     "verbs are not used between hosts"},
    {Setting::WeftTlsCert, "WEFT_TLS_CERT", String, nullptr, 0, 0, 0, nullptr, false, false,
     "WEFT_ENCRYPTION=tls: this rank's certificate chain (PEM) instead of the job secret's key"},
    {Setting::WeftTlsKey, "WEFT_TLS_KEY", String, nullptr, 0, 0, 0, nullptr, false, false,
     "WEFT_ENCRYPTION=tls: the private key (PEM) of WEFT_TLS_CERT"},
    {Setting::WeftTlsCa, "WEFT_TLS_CA", String, nullptr, 0, 0, 0, nullptr, false, false,
     "WEFT_ENCRYPTION=tls: the CA (PEM) every peer's certificate must chain to"},
    {Setting::WeftBootstrapPort, "WEFT_BOOTSTRAP_PORT", Int, nullptr, 1, 65535, 0, nullptr, false, false,
     "weftCommInitFromEnv: the bootstrap root's port, instead of MASTER_PORT"},
    {Setting::WeftBootstrapFd, "WEFT_BOOTSTRAP_FD", Int, nullptr, 0, 1048575, 0, nullptr, false, false,
     "a listening socket the launcher holds the rendezvous port with; rank 0's root adopts it "
     "(weftrun sets it)"},
    {Setting::WeftHostname, "WEFT_HOSTNAME", String, nullptr, 0, 0, 0, nullptr, false, false,
     "overrides the host identity (to simulate several hosts on one machine)"},
    {Setting::WeftTimeout, "WEFT_TIMEOUT", Double, "300", 0.1, 2592000, 0, nullptr, false, false,
     "seconds any wait may last without progress; then the call fails naming what it waited for"},
    {Setting::WeftTransport, "WEFT_TRANSPORT", Enum, "auto", 0, 0, 0, "auto|shm|ucx|tcp", true, false,
     "transport between peers on one host"},
    {Setting::NcclShmDisable, "NCCL_SHM_DISABLE", Bool, "0", 0, 1, 0, nullptr, true, false,
     "1: peers on one host use TCP"},
    {Setting::WeftNet, "WEFT_NET", Enum, "auto", 0, 0, 0, "auto|ib|ucx|tcp", true, false,
     "transport between peers on different hosts (auto: the first both ends offer of ib, ucx, tcp)"},
    {Setting::NcclNet, "NCCL_NET", String, nullptr, 0, 0, 0, nullptr, true, false,
     "NCCL's name for the network between hosts: IB (ib), UCX (ucx), Socket (tcp); WEFT_NET wins"},
    {Setting::NcclNetPlugin, "NCCL_NET_PLUGIN", String, nullptr, 0, 0, 0, nullptr, false, false,
     "not supported yet: weft warns and uses its own transports"},
    {Setting::NcclIbDisable, "NCCL_IB_DISABLE", Bool, "0", 0, 1, 0, nullptr, false, false,
     "1: this rank does not offer the verbs transport"},
    {Setting::NcclIbHca, "NCCL_IB_HCA", String, nullptr, 0, 0, 0, nullptr, false, false,
     "RDMA devices and ports for verbs: mlx5_0:1,mlx5_1 (prefixes), ^ excludes, = exact names"},
    {Setting::NcclIbGidIndex, "NCCL_IB_GID_INDEX", Int, nullptr, 0, 255, 0, nullptr, false, false,
     "RoCE GID index (default: the first IPv4-mapped GID; 0 on InfiniBand)"},
    {Setting::NcclIbTimeout, "NCCL_IB_TIMEOUT", Int, "20", 1, 31, 0, nullptr, false, false,
     "verbs ACK timeout exponent (4.096 us x 2^value)"},
    {Setting::NcclIbRetryCnt, "NCCL_IB_RETRY_CNT", Int, "7", 0, 7, 0, nullptr, false, false,
     "verbs transport retries before a peer counts as failed"},
    {Setting::NcclIbTc, "NCCL_IB_TC", Int, "0", 0, 255, 0, nullptr, false, false, "verbs traffic class (RoCE)"},
    {Setting::NcclIbSl, "NCCL_IB_SL", Int, "0", 0, 15, 0, nullptr, false, false, "verbs service level"},
    {Setting::WeftSliceBytes, "WEFT_SLICE_BYTES", Size, "262144", 4096, kGiB, 0, nullptr, true, false,
     "pipeline slice in bytes (capped by the slot sizes, rounded down to 64)"},
    {Setting::WeftRingPieceBytes, "WEFT_RING_PIECE_BYTES", Size, "1048576", 0, kGiB, 0, nullptr, true, false,
     "each rank's chunk of one piece of the ring all-reduce: a larger buffer is reduced in consecutive pieces of "
     "nranks x this (0: one piece)"},
    {Setting::WeftShmSlotBytes, "WEFT_SHM_SLOT_BYTES", Size, "524288", 4096, kGiB, 64, nullptr, true, false,
     "bytes of one slot of a shared-memory ring"},
    {Setting::WeftShmSlots, "WEFT_SHM_SLOTS", Int, "8", 1, 64, 0, nullptr, true, false,
     "slots of a shared-memory ring"},
    {Setting::WeftTcpSlotBytes, "WEFT_TCP_SLOT_BYTES", Size, "524288", 4096, kGiB, 0, nullptr, true, false,
     "bytes of one slot of a TCP staging ring"},
    {Setting::WeftTcpSlots, "WEFT_TCP_SLOTS", Int, "8", 1, 64, 0, nullptr, true, false, "slots of a TCP staging ring"},
    {Setting::WeftTcpCongestion, "WEFT_TCP_CONGESTION", String, "auto", 0, 0, 0, nullptr, false, false,
     "congestion control of TCP data sockets: auto (reno for a peer on this host, the system's between hosts), "
     "system, or a name from /proc/sys/net/ipv4/tcp_available_congestion_control"},
    {Setting::NcclNsocksPerthread, "NCCL_NSOCKS_PERTHREAD", Int, "1", 1, 64, 0, nullptr, true, false,
     "TCP sockets per peer pair = this x NCCL_SOCKET_NTHREADS (at most 64); messages are striped over them"},
    {Setting::NcclSocketNthreads, "NCCL_SOCKET_NTHREADS", Int, "1", 1, 16, 0, nullptr, true, false,
     "helper threads per TCP peer pair moving its sockets (1: the collective's own thread)"},
    {Setting::WeftUcxSlotBytes, "WEFT_UCX_SLOT_BYTES", Size, "524288", 4096, kGiB, 0, nullptr, true, false,
     "bytes of one slot of a UCX staging ring (registered once with ucp_mem_map)"},
    {Setting::WeftUcxSlots, "WEFT_UCX_SLOTS", Int, "8", 1, 64, 0, nullptr, true, false, "slots of a UCX staging ring"},
    {Setting::WeftUcxDisable, "WEFT_UCX_DISABLE", Bool, "0", 0, 1, 0, nullptr, false, false,
     "1: this rank does not offer UCX (its pairs between hosts use TCP)"},
    {Setting::WeftIbSlotBytes, "WEFT_IB_SLOT_BYTES", Size, "524288", 4096, kGiB, 0, nullptr, true, false,
     "bytes of one slot of a verbs ring (registered once with ibv_reg_mr)"},
    {Setting::WeftIbSlots, "WEFT_IB_SLOTS", Int, "8", 1, 64, 0, nullptr, true, false, "slots of a verbs ring"},
    {Setting::NcclAlgo, "NCCL_ALGO", String, nullptr, 0, 0, 0, nullptr, true, false,
     "algorithm override in NCCL's names (Ring,Tree, ^Ring), per collective with sections"},
    {Setting::WeftAlgo, "WEFT_ALGO", String, nullptr, 0, 0, 0, nullptr, true, false,
     "algorithm override in weft's names (ring, tree, rhd, hier, ...); wins over NCCL_ALGO"},
    {Setting::NcclMinNchannels, "NCCL_MIN_NCHANNELS", Int, nullptr, 1, 64, 0, nullptr, true, false,
     "least channels of the ring collectives (default: from the machine model)"},
    {Setting::NcclMaxNchannels, "NCCL_MAX_NCHANNELS", Int, nullptr, 1, 64, 0, nullptr, true, false,
     "most channels of the ring collectives (default: from the machine model)"},
    {Setting::WeftTuningFile, "WEFT_TUNING_FILE", String, nullptr, 0, 0, 0, nullptr, false, false,
     "measured link latency/bandwidth terms for the cost model; rank 0's file is used by every rank"},
    {Setting::WeftDirect, "WEFT_DIRECT", Bool, "1", 0, 1, 0, nullptr, true, false,
     "0 turns off the direct path (every collective on buffers every same-host peer maps: ncclMemAlloc's, "
     "weftMemAllocHost's)"},
    {Setting::WeftDirectMinBytes, "WEFT_DIRECT_MIN_BYTES", Size, "1048576", 0, kNoLimit, 0, nullptr, true, false,
     "smallest call in bytes (its larger buffer) that takes the direct path"},
    {Setting::WeftDirectSendRecv, "WEFT_DIRECT_SEND_RECV", Bool, "1", 0, 1, 0, nullptr, true, false,
     "0 stages sends and receives between device buffers of one host; 1 (the default) lets those of "
     "WEFT_DIRECT_MIN_BYTES or more go direct (the sender copies into the receiver's buffer), which needs "
     "each pair of ranks to group its sends and receives to each other alike, as NCCL does"},
    {Setting::WeftOneShotMaxBytes, "WEFT_ONE_SHOT_MAX_BYTES", Size, "4096", 0, 16384, 0, nullptr, true, false,
     "largest all-reduce in bytes (on one host, over shared memory) done in one exchange through the peers' "
     "mailboxes; 0 turns it off"},
    {Setting::WeftStagingSliceBytes, "WEFT_STAGING_SLICE_BYTES", Size, "4194304", 0, kNoLimit, 4096, nullptr, true,
     false,
     "bytes a rank of the slices (nranks times this, at most 8 a call; of a collective with a block per rank, "
     "this much of every block) into which collectives of two slices or more between hosts are cut where some "
     "rank has a CUDA device, so that device buffers are staged slice by slice, the copies overlapping the "
     "network; 0 stages calls whole"},
    {Setting::WeftOwnDeviceBufferBytes, "WEFT_OWN_DEVICE_BUFFER_BYTES", Size, "268435456", 65536, kNoLimit, 4096,
     nullptr, true, false,
     "most bytes of each of a communicator's own device buffers, through which device calls on memory that "
     "cannot be exported (cudaMalloc's) go direct between ranks of one host; where every rank has a device, "
     "collectives on one host that go direct and whose larger buffer is larger are cut into pieces that fit, "
     "each a call of its own"},
    {Setting::WeftCompression, "WEFT_COMPRESSION", String, nullptr, 0, 0, 0, nullptr, true, false,
     "opt-in gradient compression of ncclAllReduce (fp16, bf16, int8, int4, sign, topk:RATIO, "
     "...)"},
    {Setting::WeftTopoFile, "WEFT_TOPO_FILE", String, nullptr, 0, 0, 0, nullptr, false, false,
     "load the machine model from hwloc XML instead of discovering it"},
    {Setting::NcclTopoFile, "NCCL_TOPO_FILE", String, nullptr, 0, 0, 0, nullptr, false, false,
     "as WEFT_TOPO_FILE, when that is unset"},
    {Setting::WeftTopoDumpFile, "WEFT_TOPO_DUMP_FILE", String, nullptr, 0, 0, 0, nullptr, false, false,
     "write the machine model as hwloc XML"},
    {Setting::NcclTopoDumpFile, "NCCL_TOPO_DUMP_FILE", String, nullptr, 0, 0, 0, nullptr, false, false,
     "as WEFT_TOPO_DUMP_FILE, when that is unset"},
    {Setting::WeftBindThreads, "WEFT_BIND_THREADS", Bool, "1", 0, 1, 0, nullptr, false, false,
     "0: weft's threads are not bound to the cores near their device"},
    {Setting::WeftKernelIsa, "WEFT_KERNEL_ISA", Enum, nullptr, 0, 0, 0, "portable|avx2|avx512", false, false,
     "cap the instruction set of the CPU kernels (reduction, compression, copies)"},
    {Setting::WeftCompressionIsa, "WEFT_COMPRESSION_ISA", Enum, nullptr, 0, 0, 0, "portable|avx2|avx512", false, false,
     "deprecated alias of WEFT_KERNEL_ISA"},
    {Setting::WeftRecordEntries, "WEFT_RECORD_ENTRIES", Int, "1024", 0, 1 << 20, 0, nullptr, false, false,
     "collectives each communicator remembers (its last ones, for time-out dumps and traces); 0: none"},
    {Setting::WeftDumpOnTimeout, "WEFT_DUMP_ON_TIMEOUT", Bool, "1", 0, 1, 0, nullptr, false, false,
     "a rank whose call times out writes its recorded collectives to WEFT_DUMP_FILE"},
    {Setting::WeftDumpFile, "WEFT_DUMP_FILE", String, "/tmp/weft-records.%h.%p.r%r.txt", 0, 0, 0, nullptr, false, false,
     "where a dump of the collective record goes; %h host, %p pid, %r rank, %c communicator"},
    {Setting::WeftTrace, "WEFT_TRACE", String, nullptr, 0, 0, 0, nullptr, false, false,
     "write a Chrome/Perfetto trace of every recorded collective there (%h host, %p pid)"},
    {Setting::WeftMetricsFile, "WEFT_METRICS_FILE", String, nullptr, 0, 0, 0, nullptr, false, false,
     "each communicator's collective statistics, Prometheus text format (%h host, %p pid, %r rank, %c communicator)"},
    {Setting::WeftMetricsInterval, "WEFT_METRICS_INTERVAL", Double, "10", 0.01, 86400, 0, nullptr, false, false,
     "seconds between rewrites of WEFT_METRICS_FILE"},
    {Setting::WeftStatusServer, "WEFT_STATUS_SERVER", Bool, "1", 0, 1, 0, nullptr, false, false,
     "a thread per process answers `weft-info status` (Unix socket weft-status.PID, abstract, same user only)"},
    {Setting::WeftDumpSignal, "WEFT_DUMP_SIGNAL", Enum, "none", 0, 0, 0, "none|SIGUSR1|SIGUSR2", false, false,
     "this signal makes every communicator of the process dump its collective record (WEFT_DUMP_FILE)"},
}};

constexpr bool rowsInEnumOrder() {
  for (size_t i = 0; i < kSettings.size(); ++i)
    if (static_cast<size_t>(kSettings[i].id) != i) return false;
  return true;
}
static_assert(rowsInEnumOrder(), "kSettings rows must follow the order of enum Setting");

constexpr size_t agreedRowCount() {
  size_t count = 0;
  for (const SettingSpec& spec : kSettings) count += spec.ranksMustAgree ? 1 : 0;
  return count;
}
static_assert(agreedRowCount() <= kMaxAgreedSettings, "raise kMaxAgreedSettings (common/settings_digest.h)");

}  // namespace

std::span<const SettingSpec> allSettings() { return kSettings; }

}  // namespace weft
