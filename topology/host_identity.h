// Which host a rank runs on: hostname plus the kernel boot id, so two containers or VMs that
// share a hostname are still told apart. WEFT_HOSTNAME overrides it (tests run several fake
// hosts on one machine).
#pragma once

#include <string>

namespace weft {

// "WEFT_HOSTNAME" verbatim when set and non-empty; else "<hostname>:<boot id>" (boot id from
// /proc/sys/kernel/random/boot_id; the hostname alone when that cannot be read).
std::string hostIdentity();

}  // namespace weft
