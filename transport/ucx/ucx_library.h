// UCX's functions, loaded with dlopen when a communicator first connects through UCX, never at
// program start. Linking libucp would load libucm with libweft, and libucm patches mmap and
// madvise in libc as it loads: every process using weft (a PyTorch trainer on one host, a
// sanitizer build) would carry those patches even if it never used UCX. Loaded here, only
// processes that use UCX do, and UCX's memory hooks are off unless the user asks for them
// (weft registers its own rings once and never needs UCX to watch the process's memory).
#pragma once

#include <ucp/api/ucp.h>

#include <string>

namespace weft {

// clang-format off
#define WEFT_UCX_FUNCTIONS(X) \
  X(ucp_config_read) X(ucp_config_modify) X(ucp_config_release) X(ucp_init_version) X(ucp_cleanup) \
  X(ucp_worker_create) X(ucp_worker_destroy) X(ucp_worker_get_address) X(ucp_worker_release_address) \
  X(ucp_worker_get_efd) X(ucp_worker_progress) X(ucp_worker_arm) \
  X(ucp_tag_send_nbx) X(ucp_tag_recv_nbx) X(ucp_tag_probe_nb) X(ucp_tag_msg_recv_nbx) \
  X(ucp_request_free) X(ucp_request_check_status) X(ucp_request_cancel) \
  X(ucp_mem_map) X(ucp_mem_unmap) X(ucp_ep_create) X(ucp_ep_close_nbx) X(ucp_ep_flush_nbx) \
  X(ucs_status_string)
// clang-format on

struct UcxLibrary {
#define WEFT_UCX_POINTER(name) decltype(&::name) name = nullptr;
  WEFT_UCX_FUNCTIONS(WEFT_UCX_POINTER)
#undef WEFT_UCX_POINTER
};

// The library, loaded on the first call (libucp.so.0, which brings libucs, libuct, libucm);
// null with the reason in *why when it cannot be loaded.
const UcxLibrary* loadUcxLibrary(std::string* why);
// The loaded library: only for code that runs after loadUcxLibrary succeeded.
const UcxLibrary& ucx();

}  // namespace weft
