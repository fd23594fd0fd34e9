// NCCL_IB_HCA: which RDMA devices and ports the verbs transport may use, in NCCL's syntax.
// "mlx5_0:1,mlx5_1" lists devices (each optionally with a port) matched by prefix; a leading
// "^" excludes the listed ones instead; a leading "=" (after any "^") matches names exactly.
// Empty: every device and port.
#pragma once

#include <string>
#include <vector>

#include "nccl.h"

namespace weft {

class IbDeviceFilter {
 public:
  // Fails with ncclInvalidArgument naming NCCL_IB_HCA on a malformed port.
  static ncclResult_t parse(const std::string& text, IbDeviceFilter* out);
  bool allows(const std::string& device, int port) const;

 private:
  struct Entry {
    std::string name;
    int port = -1;  // any
  };
  bool exclude_ = false;
  bool exact_ = false;
  std::vector<Entry> entries_;
};

}  // namespace weft
