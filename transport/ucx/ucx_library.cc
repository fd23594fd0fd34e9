#include "transport/ucx/ucx_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace weft {

namespace {
UcxLibrary library;
bool loaded = false;
std::string failure;

void load() {
  // Before libucm's constructor reads it: no patches to libc's mmap family unless asked for.
  setenv("UCX_MEM_EVENTS", "no", /*overwrite=*/0);
  void* handle = dlopen("libucp.so.0", RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* error = dlerror();
    failure = std::string("cannot load libucp.so.0: ") + (error ? error : "unknown error");
    return;
  }
#define WEFT_UCX_LOOKUP(name)                                                           \
  library.name = reinterpret_cast<decltype(library.name)>(dlsym(handle, #name));        \
  if (!library.name) {                                                                  \
    failure = "libucp.so.0 has no " #name " (older than the UCX weft was built with?)"; \
    return;                                                                             \
  }
  WEFT_UCX_FUNCTIONS(WEFT_UCX_LOOKUP)
#undef WEFT_UCX_LOOKUP
  loaded = true;  // never closed: UCX's threads and hooks outlive any one communicator
}
}  // namespace

const UcxLibrary* loadUcxLibrary(std::string* why) {
  static std::once_flag once;
  std::call_once(once, load);
  if (!loaded && why) *why = failure;
  return loaded ? &library : nullptr;
}

const UcxLibrary& ucx() { return library; }

}  // namespace weft
