// CPU binding: the calling thread's current binding, and binding a progress thread to the
// cores near the device it serves (hwloc_set_cpubind). WEFT_BIND_THREADS=0 turns binding off.
#pragma once

#include <string>

#include "nccl.h"

namespace weft {

// This thread's CPU binding as an hwloc bitmap string ("0x00000003"); "" when unknown.
std::string currentCpuBinding();

// False when WEFT_BIND_THREADS=0 (default on).
bool threadBindingEnabled();

// Binds the calling thread to the CPUs of `deviceCpuset` that the process may use. Does
// nothing (successfully) when binding is off, when `deviceCpuset` is empty, or when none of its
// CPUs is allowed (a model loaded from another machine, a launcher's tighter binding). Fails
// with ncclInvalidArgument when `deviceCpuset` does not parse, ncclSystemError when hwloc
// refuses to bind. `*bound` (optional) tells whether the thread was bound.
ncclResult_t bindThreadNear(const std::string& deviceCpuset, bool* bound = nullptr);

}  // namespace weft
