// Shared-memory transport between ranks on one host (processes or threads). Each rank owns
// a segment with one receive ring per rank of the communicator; a sender copies (or reduces)
// straight into the receiver's ring slot, the receiver consumes from it. Waiting ranks sleep
// on a futex doorbell that the other side rings only when the sleeper asked for it.
#pragma once

#include <memory>
#include <vector>

#include "transport/shm/shm_segment.h"
#include "transport/transport.h"

namespace weft {

using ShmSettings = RingGeometry;

class ShmTransport : public Transport, private Doorbell {
 public:
  // WEFT_SHM_SLOT_BYTES (default 512 KiB) and WEFT_SHM_SLOTS (default 8).
  static ShmSettings settingsFromEnv();

  explicit ShmTransport(const ShmSettings& settings) : settings_(settings) {}
  ~ShmTransport() override;

  // The segment has a ring for every rank of the communicator (sparse: local ranks are only
  // known once the endpoints arrive; only rings actually used are ever faulted in).
  ncclResult_t listen(const TransportSetup& setup, TransportEndpoint* mine) override;
  bool canConnect(const TransportEndpoint& self, const TransportEndpoint& peer) const override;
  ncclResult_t connect(const TransportEndpoint& peer, std::unique_ptr<Connection>* out) override;
  size_t maxMessageBytes() const override { return settings_.slotBytes; }
  void markAborted() override;
  Doorbell* doorbell() override { return own_.header() ? this : nullptr; }

 private:
  uint32_t arm() override;
  void wait(uint32_t seen, long timeoutMicros) override;
  void disarm() override;

  ShmSettings settings_;
  ShmSegment own_;
  FdTicket ownTicket_;  // how peers fetch own_'s descriptor
  int rank_ = -1;
  double timeoutSeconds_ = 0;
};

}  // namespace weft
