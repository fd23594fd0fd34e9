// UCX transport (between hosts, or on one host when forced). One UCP worker per communicator
// (transport/ucx/ucx_worker.h); each peer pair swaps worker addresses through the
// communicator's PeerHandshake and opens an endpoint with peer-failure handling. Messages are
// tagged sends between staging rings registered with ucp_mem_map once: UCX sends small ones
// eagerly and large ones by rendezvous (zero-copy where its transport can). Each message's
// receive is posted before it is sent: the receiver posts its whole ring up front, re-posts a
// slot when it is released and tells the sender (in the tag of each message it sends back,
// or in a credit update when it has none to send), and the sender never runs ahead of the
// receives posted for it, so UCX never buffers an unexpected message.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "transport/transport.h"

namespace weft {

class UcxWorker;

using UcxSettings = RingGeometry;

class UcxTransport : public Transport {
 public:
  // What UCX's hellos are tagged with in the peer handshake ("UCX0").
  static constexpr uint32_t kHandshakeTag = 0x55435830;

  // WEFT_UCX_SLOT_BYTES (default 512 KiB) and WEFT_UCX_SLOTS (default 8); UCX reads its own UCX_*.
  static UcxSettings settingsFromEnv();

  explicit UcxTransport(const UcxSettings& settings);
  ~UcxTransport() override;

  // Peers meet through setup.handshake; a worker is made on the first connection that needs it
  // (UCX costs milliseconds and a thread, which communicators with every peer on one host never
  // need). With several NICs (setup.railInterfaces) a pair's data goes through its rail's NIC:
  // one worker per rail, on a context that sees that NIC only, unless UCX_NET_DEVICES is set.
  ncclResult_t listen(const TransportSetup& setup, TransportEndpoint* mine) override;
  // Not when WEFT_UCX_DISABLE=1 (read when the transport is made).
  bool offered() const override { return !disabled_; }
  bool canConnect(const TransportEndpoint& self, const TransportEndpoint& peer) const override;
  ncclResult_t connect(const TransportEndpoint& peer, std::unique_ptr<Connection>* out) override;
  size_t maxMessageBytes() const override { return settings_.slotBytes; }

 private:
  UcxSettings settings_;
  bool disabled_;
  PeerHandshake* handshake_ = nullptr;
  std::vector<std::string> railInterfaces_;
  std::map<int, std::shared_ptr<UcxWorker>> workers_;  // by rail (-1: UCX's choice of devices)
};

}  // namespace weft
