// An RDMA device and port for the verbs transport: which one NCCL_IB_HCA allows (the first
// with an active port), and, once a peer needs it, the opened context, protection domain and
// the port's addressing (LID for InfiniBand, a GID for RoCE with NCCL_IB_GID_INDEX).
#pragma once

#include <infiniband/verbs.h>

#include <memory>
#include <string>
#include <vector>

#include "nccl.h"

namespace weft {

struct IbPortChoice {
  std::string device;  // e.g. "mlx5_0"
  int port = 0;
};

// Every device:port that NCCL_IB_HCA allows and whose port is active, in the order
// ibv_get_device_list gives them; false when there is none (no RDMA device, or none allowed).
// `why` says what was found, for the INFO log.
bool chooseIbPorts(std::vector<IbPortChoice>* out, std::string* why);

class IbDevice {
 public:
  static ncclResult_t open(const IbPortChoice& choice, std::shared_ptr<IbDevice>* out);
  ~IbDevice();
  IbDevice(const IbDevice&) = delete;
  IbDevice& operator=(const IbDevice&) = delete;

  ibv_context* context() const { return context_; }
  ibv_pd* protectionDomain() const { return pd_; }
  int port() const { return choice_.port; }
  const std::string& name() const { return choice_.device; }
  uint16_t lid() const { return portAttributes_.lid; }
  bool ethernet() const { return portAttributes_.link_layer == IBV_LINK_LAYER_ETHERNET; }
  ibv_mtu activeMtu() const { return portAttributes_.active_mtu; }
  const ibv_gid& gid() const { return gid_; }
  int gidIndex() const { return gidIndex_; }

 private:
  IbDevice() = default;
  ncclResult_t chooseGid();

  IbPortChoice choice_;
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_port_attr portAttributes_{};
  ibv_gid gid_{};
  int gidIndex_ = 0;
};

}  // namespace weft
