// What a UCX context of one rail may use (UCX_NET_DEVICES' syntax): the rail's NIC as UCX's tcp
// transport names it, and the RDMA ports of the same adapter (a RoCE or IPoIB netdev's PCI
// function lists its verbs devices under device/infiniband/ in sysfs), so that a rail chosen by
// its netdev (NCCL_SOCKET_IFNAME) keeps RDMA where the NIC has it instead of falling back to tcp.
#pragma once

#include <string>

namespace weft {

// "eth2" or, with a verbs device on the same PCI function, "eth2,mlx5_2:1" (every port of it).
// `sysfs` is the root to read (/sys; tests pass a directory of their own).
std::string ucxDevicesOfNic(const std::string& interfaceName, const std::string& sysfs = "/sys");

}  // namespace weft
