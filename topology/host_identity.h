// Which host a rank runs on, as far as shared memory goes: hostname, kernel boot id and the
// PID, IPC and network namespaces, so two VMs that share a hostname, or two containers on one
// machine, are told apart. WEFT_HOSTNAME overrides it (tests run several fake hosts on one
// machine).
#pragma once

#include <string>

namespace weft {

// "WEFT_HOSTNAME" verbatim when set and non-empty; else "<hostname>:<boot id>:ns=<pid>.<ipc>.<net>"
// (boot id from /proc/sys/kernel/random/boot_id, left out when it cannot be read; namespace
// inodes from /proc/self/ns).
std::string hostIdentity();

}  // namespace weft
