// The transport interface: what the executor needs from any way of moving bytes between
// two ranks. A Transport is one way (shared memory, TCP, ...) set up once per communicator;
// a Connection joins this rank to one peer through it, in both directions; messages are
// delivered whole and in order. Transports never know which collective they carry.
// transport/transport_table.h lists the transports and says how a new one plugs in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/settings.h"
#include "common/socket.h"
#include "nccl.h"
#include "transport/fd_broker.h"
#include "transport/peer_handshake.h"

namespace weft {

// What one rank publishes about itself, through the communicator's bootstrap exchange, so
// that every transport can tell whether it reaches that rank and how. Plain data.
struct TransportEndpoint {
  int32_t rank = -1;
  int32_t pid = 0;
  uint64_t hostHash = 0;      // ranks with equal hashes share a host (and its memory)
  FdTicket shmSegment;        // shared-memory segment, handed over by the fd broker
  SocketAddress dataAddress;  // the peer handshake's listener (length 0: none)
  uint32_t offered = 0;       // TransportKind bits of the transports this rank listens with
  // For a peer on another host: the local rank of the pair's higher rank, whose rail the pair
  // uses where a host has several NICs (set by the communicator when it connects; -1: none).
  int32_t railLocalRank = -1;
  // That rail's index among the higher rank's NICs (runtime/comm/network_rails.h), the same on
  // both sides of the pair (-1: none, the hosts have one NIC each).
  int32_t rail = -1;
};

// What a transport needs to listen for one communicator.
struct TransportSetup {
  int rank = 0;
  int nranks = 0;
  double timeoutSeconds = 0;  // for connection set-up (WEFT_TIMEOUT)
  // The communicator's listener, through which network transports meet their peers; it
  // outlives the transports and knows the communicator's token.
  PeerHandshake* handshake = nullptr;
  // This host's NICs by rail (rail k's interface name at index k; empty: one NIC).
  std::vector<std::string> railInterfaces;
};

// The shape of a transport's staging ring, from its WEFT_<NAME>_SLOT_BYTES and _SLOTS.
struct RingGeometry {
  size_t slotBytes;
  uint32_t slots;
};
RingGeometry ringGeometryFromEnv(Setting slotBytes, Setting slots);

// Optional transfers between registered user buffers (RDMA, CUDA IPC): no staging slot,
// no copy through the CPU. A transport that cannot do them answers ncclInvalidUsage.
using MemoryHandle = uint64_t;  // a registration, valid on the connection that made it
using RangeRequest = uint64_t;  // a posted transfer, until testRange() reports it done

// The longest error a rank tells its peers when its communicator fails (Connection::markFailed).
constexpr size_t kPeerFailureBytes = 512;
// A peer's error text, fit to print: at most kPeerFailureBytes, anything but printable ASCII
// replaced by '?'.
std::string printablePeerFailure(const char* text, size_t bytes);

class Connection {
 public:
  virtual ~Connection() = default;

  virtual const char* transportName() const = 0;
  // Largest message sendBuffer() accepts.
  virtual size_t maxMessageBytes() const = 0;

  // Reserves the next message of `bytes` and sets *buffer to memory to fill, or to nullptr
  // while the peer has no room; then sendCommit() publishes it. Zero-copy: the caller writes
  // (or reduces) straight into transport memory. ncclInvalidUsage when `bytes` exceeds
  // maxMessageBytes(). Calling it again before sendCommit() reserves again (same slot).
  virtual ncclResult_t sendBuffer(size_t bytes, void** buffer) = 0;
  // Publishes the reserved message; `bytes` may be less than reserved, never more.
  virtual ncclResult_t sendCommit(size_t bytes) = 0;

  // The next whole message (*data == nullptr while none has arrived); recvRelease() hands its
  // memory back once the caller has consumed it.
  virtual ncclResult_t recvPeek(const void** data, size_t* bytes) = 0;
  virtual void recvRelease() = 0;

  // Moves bytes that need the CPU (sockets); cheap when there is nothing to do.
  virtual ncclResult_t progress() = 0;
  // Called before the rank sleeps: an error if the peer died or aborted.
  virtual ncclResult_t checkPeer() = 0;
  // Called with checkPeer() while a collective waits on the peer, but not by the control
  // messages that recover a failed communicator (ncclCommShrink's): an error, quoting the peer's
  // own, if the peer's communicator failed a call (markFailed, below), after which it sends
  // nothing more for the calls in flight. Without it, a rank waiting on a survivor of a dead
  // rank, rather than on the dead rank, would wait out WEFT_TIMEOUT.
  virtual ncclResult_t checkPeerCarriesOn() { return ncclSuccess; }
  // Tells the peer that this rank's communicator failed a call with `error`, so that the peer,
  // if it waits on this rank in a collective, fails at once quoting it (checkPeerCarriesOn)
  // instead of at its time-out. The connection stays usable for ncclCommShrink's messages.
  // Shared memory and single-socket TCP say it; the other transports do not yet.
  virtual void markFailed(const std::string& error) { (void)error; }

  // The mailbox: one small message per call, written where the peer reads it in place (shared
  // memory), for the one-shot collectives (runtime/exec/one_shot.h). mailboxBytes() is the
  // largest message, 0 when the transport has no mailbox (then the other two fail with
  // ncclInvalidUsage). A message is tagged with the caller's call number, counted from 1; the
  // peer's message number n may be overwritten by its number n + 2 as soon as the peer posts
  // it, so callers post number n + 2 only after taking every peer's number n + 1.
  virtual size_t mailboxBytes() const { return 0; }
  virtual ncclResult_t mailboxPost(uint64_t sequence, const void* data, size_t bytes);
  // The peer's message number `sequence` (*data == nullptr until it arrived).
  virtual ncclResult_t mailboxPeek(uint64_t sequence, const void** data, size_t* bytes);
  // A file descriptor to poll() for activity while sleeping, or -1 (then the transport wakes
  // this rank through its Transport's doorbell). Also -1 once nothing more can arrive (the
  // peer closed): an fd at end of file would wake poll() at once, forever.
  virtual int pollFd() const { return -1; }
  // Called just before the rank sleeps on pollFd(): false when activity is already pending that
  // the fd would not signal (then the rank progresses instead of sleeping). UCX arms its worker.
  virtual bool armPollFd() { return true; }
  // True when sends are still queued locally (the rank must keep calling progress()).
  virtual bool hasPendingSends() const { return false; }

  // In-place messages: sent straight from the caller's memory and received straight into it,
  // without the staging slot's copy (sockets, where the kernel copies every byte anyway). Only
  // where transfersInPlace(); the others fail with ncclInvalidUsage. Both are called again with
  // the same arguments until *done, and until then the caller leaves the memory as it is. They
  // share the connection's one order with sendBuffer()/recvPeek() messages, and the peer cannot
  // tell them apart. recvInto sets *got to the next message's size once known: a message of
  // another size than `bytes` is left for recvPeek() (*done stays false).
  virtual bool transfersInPlace() const { return false; }
  virtual ncclResult_t sendFrom(const void* data, size_t bytes, bool* done);
  virtual ncclResult_t recvInto(void* data, size_t bytes, size_t* got, bool* done);
  // Lets go of the caller's memory when a run ends before its in-place messages are done (an
  // error, an abort); a message already half moved leaves the connection failed.
  virtual void abandonInPlace() {}

  // Registered-range transfers (see MemoryHandle). supportsRanges() says whether the rest
  // works; the defaults fail with ncclInvalidUsage "... not supported by <transport>".
  // A send range is matched with the peer's next posted receive range of the same size.
  virtual bool supportsRanges() const { return false; }
  virtual ncclResult_t registerMemory(void* ptr, size_t bytes, MemoryHandle* handle);
  virtual ncclResult_t deregisterMemory(MemoryHandle handle);
  virtual ncclResult_t postSendRange(MemoryHandle handle, size_t offset, size_t bytes, RangeRequest* request);
  virtual ncclResult_t postRecvRange(MemoryHandle handle, size_t offset, size_t bytes, RangeRequest* request);
  // *done once the transfer completed (the request is then forgotten); an error if it failed.
  virtual ncclResult_t testRange(RangeRequest request, bool* done);

  // The rail (TransportEndpoint::rail) whose NICs this connection's data crosses, set by a
  // transport that follows rails (TCP through the rail's listener, UCX through its rail's
  // worker); -1 otherwise. The communicator's INFO says it.
  int dataRail() const { return dataRail_; }
  void setDataRail(int rail) { dataRail_ = rail; }

 protected:
  // recvInto's way through the staging ring: the next message (recvPeek), copied into `data` and
  // released when it is `bytes` long; *got is its size once it has arrived.
  ncclResult_t copyOutNextMessage(void* data, size_t bytes, size_t* got, bool* done);

 private:
  int dataRail_ = -1;
};

// A word that a sleeping rank waits on and that peers ring when they deliver something
// (shared memory's futex). arm() before the last check for work, then wait(), then disarm().
class Doorbell {
 public:
  virtual ~Doorbell() = default;
  virtual uint32_t arm() = 0;  // announces the sleep; returns the value to wait on
  virtual void wait(uint32_t seen, long timeoutMicros) = 0;
  virtual void disarm() = 0;
};

// One transport's per-communicator state: what it listens on and how it connects.
class Transport {
 public:
  virtual ~Transport() = default;

  // Opens what peers connect to and records how to reach it in `mine`.
  virtual ncclResult_t listen(const TransportSetup& setup, TransportEndpoint* mine) = 0;
  // Whether this rank offers the transport to its peers (a transport the user turned off on
  // this rank, WEFT_UCX_DISABLE say, does not; then no pair uses it).
  virtual bool offered() const { return true; }
  // Whether this transport can join `self` to `peer` (both as published by listen()).
  virtual bool canConnect(const TransportEndpoint& self, const TransportEndpoint& peer) const = 0;
  // Both ranks of a pair call this (in either order, possibly concurrently on threads).
  virtual ncclResult_t connect(const TransportEndpoint& peer, std::unique_ptr<Connection>* out) = 0;
  // Largest message its connections carry (the communicator slices below it).
  virtual size_t maxMessageBytes() const = 0;
  // Marks this rank aborted so that peers waiting on it fail instead of hanging.
  virtual void markAborted() {}
  // What this rank can sleep on while its connections of this transport are quiet, or null.
  virtual Doorbell* doorbell() { return nullptr; }
};

}  // namespace weft
