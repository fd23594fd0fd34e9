// The RDMA protocol of the verbs transport, on any RdmaQueue (rdma_queue.h), so that its CPU
// tests run it against an in-memory queue pair. Each side owns a send ring and a receive ring
// of `slots` slots; the peer knows where this side's receive ring is. Message s is written
// from send slot s into the peer's receive slot s (mod slots) by one RDMA write with
// immediate, the immediate carrying its length: RC keeps writes in order, so arrivals are the
// messages in order. The receiver returns credits, the count of slots it has released, as a
// zero-byte write whose immediate has the top bit set; the sender writes message s only when
// s < credits + slots, so it never overwrites an unread slot. Enough receives stay posted for
// every message and credit that can be in flight.
#pragma once

#include <memory>
#include <vector>

#include "transport/ibverbs/rdma_queue.h"
#include "transport/send_reservation.h"
#include "transport/transport.h"

namespace weft {

// The rings' memory, registered by the owner (for verbs: with ibv_reg_mr) and outliving the
// connection's use of it.
struct RdmaRings {
  char* send = nullptr;
  char* receive = nullptr;
  size_t slotBytes = 0;  // below 2^31: a length must fit in an immediate
  uint32_t slots = 0;
};

class RdmaConnection : public Connection {
 public:
  // `name` prefixes errors ("ibverbs"); `peerRank` is named in them.
  RdmaConnection(std::unique_ptr<RdmaQueue> queue, const RdmaRings& rings, int peerRank, const char* name);

  // Posts the receives; call before the peer may write (before telling it this side is ready).
  ncclResult_t start();

  const char* transportName() const override { return "IB"; }
  size_t maxMessageBytes() const override { return rings_.slotBytes; }
  ncclResult_t sendBuffer(size_t bytes, void** buffer) override;
  ncclResult_t sendCommit(size_t bytes) override;
  ncclResult_t recvPeek(const void** data, size_t* bytes) override;
  void recvRelease() override;
  ncclResult_t progress() override;
  ncclResult_t checkPeer() override { return failed_; }
  int pollFd() const override { return queue_->eventFd(); }
  bool armPollFd() override { return queue_->armEvents(); }
  bool hasPendingSends() const override { return sendHead_ != sendTail_; }

  // Receives posted at any time: a slot per message plus a credit per message the peer may
  // release before this side polls again, and two to spare.
  static uint32_t receivesToPost(uint32_t slots) { return 2 * slots + 2; }

 private:
  ncclResult_t pollCompletions();
  ncclResult_t sendCredits();
  ncclResult_t failWith(const char* what, const char* error);

  std::unique_ptr<RdmaQueue> queue_;
  RdmaRings rings_;
  int peerRank_;
  const char* name_;
  std::vector<uint32_t> arrivedBytes_;  // by receive slot
  uint64_t sendHead_ = 0;               // oldest write not yet acknowledged
  uint64_t sendTail_ = 0;               // next message
  uint64_t peerReleased_ = 0;           // the peer's credits: slots of its receive ring it has released
  uint64_t recvHead_ = 0;               // next message to deliver (also the slots released so far)
  uint64_t recvTail_ = 0;               // messages arrived
  uint64_t creditsSent_ = 0;            // the release count last written to the peer
  bool creditInFlight_ = false;
  uint64_t nextReceiveId_ = 0;
  ncclResult_t failed_ = ncclSuccess;
  SendReservation reserved_;
};

}  // namespace weft
