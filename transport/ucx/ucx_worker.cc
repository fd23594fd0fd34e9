#include "transport/ucx/ucx_worker.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "common/status.h"
#include "transport/ucx/ucx_library.h"

namespace weft {

class UcxContext {
 public:
  ~UcxContext() {
    if (context_) ucx().ucp_cleanup(context_);
  }
  // The process's context for `netDevices` (empty: every device UCX finds), made on first use
  // and cleaned up with its last user.
  static ncclResult_t acquire(const std::string& netDevices, std::shared_ptr<UcxContext>* out) {
    static std::mutex mutex;
    static std::map<std::string, std::weak_ptr<UcxContext>> shared;
    std::lock_guard<std::mutex> lock(mutex);
    if ((*out = shared[netDevices].lock())) return ncclSuccess;
    std::string why;
    if (!loadUcxLibrary(&why)) return fail(ncclSystemError, "ucx: %s", why.c_str());
    auto made = std::shared_ptr<UcxContext>(new UcxContext);
    ucp_config_t* config = nullptr;
    ucs_status_t status = ucx().ucp_config_read(nullptr, nullptr, &config);
    if (status != UCS_OK)
      return fail(ncclSystemError, "ucx: reading UCX_* settings failed: %s", ucx().ucs_status_string(status));
    // Eager sends at every size: every message's receive is posted before it is sent, so an
    // eager message lands in it with one copy, as a rendezvous's would, minus its round trips.
    // With UCX 1.13's rendezvous over tcp, large messages reached 58-75% of a shaped link,
    // eager 100% (docs/performance.md). RDMA fabrics get weft's verbs transport, not this one.
    // A UCX_RNDV_THRESH the user set wins. UCX's newer protocols (UCX_PROTO_ENABLE=y) stay off:
    // in 1.13 they abort the process when a peer dies during the wire-up
    // (tests/integration/ucx_peer_loss_test.cc).
    if (!getenv("UCX_RNDV_THRESH")) (void)ucx().ucp_config_modify(config, "RNDV_THRESH", "inf");
    // UCX's tcp transport cuts eager messages into 8 KiB segments by default; 64 KiB ones are
    // faster for large messages (docs/performance.md). A value the user set wins.
    // ucp_config_modify hands names UCP does not know to every transport's table, where the
    // names have no transport prefix: "TX_SEG_SIZE" (tcp's only), not "TCP_TX_SEG_SIZE", which
    // no table has (UCX then warns "invalid configurations" when the worker is made).
    if (!getenv("UCX_TCP_TX_SEG_SIZE")) (void)ucx().ucp_config_modify(config, "TX_SEG_SIZE", "64K");
    if (!getenv("UCX_TCP_RX_SEG_SIZE")) (void)ucx().ucp_config_modify(config, "RX_SEG_SIZE", "128K");
    // A rail's context sees that rail's NIC only (the caller leaves a user's UCX_NET_DEVICES be).
    if (!netDevices.empty()) {
      status = ucx().ucp_config_modify(config, "NET_DEVICES", netDevices.c_str());
      if (status != UCS_OK) {
        ucx().ucp_config_release(config);
        return fail(ncclSystemError, "ucx: cannot restrict UCX to the device %s: %s", netDevices.c_str(),
                    ucx().ucs_status_string(status));
      }
    }
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    params.mt_workers_shared = 1;  // one worker per communicator, communicators on any thread
    status = ucx().ucp_init_version(UCP_API_MAJOR, UCP_API_MINOR, &params, config, &made->context_);
    ucx().ucp_config_release(config);
    if (status != UCS_OK) {
      made->context_ = nullptr;
      return fail(ncclSystemError, "ucx: ucp_init failed: %s", ucx().ucs_status_string(status));
    }
    shared[netDevices] = made;
    *out = made;
    return ncclSuccess;
  }
  ucp_context_h handle() const { return context_; }

 private:
  UcxContext() = default;
  ucp_context_h context_ = nullptr;
};

ncclResult_t UcxWorker::create(const std::string& netDevices, std::shared_ptr<UcxWorker>* out) {
  std::shared_ptr<UcxWorker> made(new UcxWorker);
  WEFT_CHECK(UcxContext::acquire(netDevices, &made->context_));
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  // A communicator is driven by one thread at a time, but not always the same one (the
  // caller, a stream's progress thread, a torch worker): MULTI takes UCX's lock per call.
  params.thread_mode = UCS_THREAD_MODE_MULTI;
  ucs_status_t status = ucx().ucp_worker_create(made->context_->handle(), &params, &made->worker_);
  if (status != UCS_OK) {
    made->worker_ = nullptr;
    return fail(ncclSystemError, "ucx: ucp_worker_create failed: %s", ucx().ucs_status_string(status));
  }
  ucp_address_t* address = nullptr;
  size_t bytes = 0;
  status = ucx().ucp_worker_get_address(made->worker_, &address, &bytes);
  if (status != UCS_OK)
    return fail(ncclSystemError, "ucx: ucp_worker_get_address failed: %s", ucx().ucs_status_string(status));
  const auto* begin = reinterpret_cast<const uint8_t*>(address);
  made->address_.assign(begin, begin + bytes);
  ucx().ucp_worker_release_address(made->worker_, address);
  status = ucx().ucp_worker_get_efd(made->worker_, &made->eventFd_);
  if (status != UCS_OK)
    return fail(ncclSystemError, "ucx: ucp_worker_get_efd failed: %s", ucx().ucs_status_string(status));
  *out = std::move(made);
  return ncclSuccess;
}

// Takes in messages nobody will receive any more (a peer's last credit update, sent while this
// side was closing): left queued, UCX would warn about each when the worker is destroyed.
void UcxWorker::discardUnexpected() {
  std::vector<char> scratch;
  for (int message = 0; message < 1024; ++message) {
    ucx().ucp_worker_progress(worker_);
    ucp_tag_recv_info_t info{};
    ucp_tag_message_h unexpected = ucx().ucp_tag_probe_nb(worker_, 0, 0, 1, &info);
    if (!unexpected) return;
    scratch.resize(info.length);
    ucp_request_param_t param{};
    void* request = ucx().ucp_tag_msg_recv_nbx(worker_, scratch.data(), info.length, unexpected, &param);
    if (UCS_PTR_IS_ERR(request)) return;
    // Eager messages are here already; a rendezvous needs a sender that may be gone: bounded.
    for (int spin = 0; request && spin < 1000 && ucx().ucp_request_check_status(request) == UCS_INPROGRESS; ++spin)
      ucx().ucp_worker_progress(worker_);
    if (request) ucx().ucp_request_free(request);
  }
}

UcxWorker::~UcxWorker() {
  if (worker_) discardUnexpected();
  if (worker_) ucx().ucp_worker_destroy(worker_);
  kept_.clear();  // after the worker: its callbacks are over (the context, still held, unmaps)
}

void UcxWorker::keepUntilDestroyed(std::shared_ptr<void> state) {
  std::lock_guard<std::mutex> lock(keptMutex_);
  kept_.push_back(std::move(state));
}

ucp_context_h UcxWorker::context() const { return context_->handle(); }

void UcxWorker::progress() {
  for (int i = 0; i < 64 && ucx().ucp_worker_progress(worker_) != 0; ++i) {}
}

bool UcxWorker::arm() { return ucx().ucp_worker_arm(worker_) == UCS_OK; }

}  // namespace weft
