// UCX's shared state for the UCX transport: one UCP context per process and set of network
// devices (UCX reads its UCX_* settings and opens its transports once; a context also starts
// UCX's async thread, so it lives only while some communicator uses it) and one UCP worker per
// communicator and rail, which that communicator's UCX connections on the rail go through.
#pragma once

#include <ucp/api/ucp.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nccl.h"

namespace weft {

class UcxContext;

class UcxWorker {
 public:
  // A worker on the process's context for `netDevices` (UCX_NET_DEVICES' syntax: a rail's NIC;
  // empty: UCX's own choice), made now if no communicator holds one.
  static ncclResult_t create(const std::string& netDevices, std::shared_ptr<UcxWorker>* out);
  ~UcxWorker();
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  ucp_context_h context() const;
  ucp_worker_h worker() const { return worker_; }
  // What a peer needs to reach this worker (ucp_ep_create's remote address).
  const std::vector<uint8_t>& address() const { return address_; }
  // The fd that becomes readable when the worker has events, once armed (ucp_worker_arm).
  int eventFd() const { return eventFd_; }
  // Makes progress until the worker reports nothing more to do (bounded).
  void progress();
  // Arms the event fd; false when events are pending (progress instead of sleeping).
  bool arm();
  // Keeps `state` until the worker is destroyed: what callbacks of a connection that closed
  // with requests unfinished may still write to (no callback runs after ucp_worker_destroy).
  void keepUntilDestroyed(std::shared_ptr<void> state);

 private:
  UcxWorker() = default;
  void discardUnexpected();
  std::shared_ptr<UcxContext> context_;
  ucp_worker_h worker_ = nullptr;
  std::vector<uint8_t> address_;
  int eventFd_ = -1;
  std::mutex keptMutex_;
  std::vector<std::shared_ptr<void>> kept_;
};

}  // namespace weft
