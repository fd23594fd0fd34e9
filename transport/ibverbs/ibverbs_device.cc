#include "transport/ibverbs/ibverbs_device.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/settings.h"
#include "common/status.h"
#include "transport/ibverbs/ib_device_filter.h"

namespace weft {

bool chooseIbPorts(std::vector<IbPortChoice>* out, std::string* why) {
  out->clear();
  IbDeviceFilter filter;
  const std::string hca = settingString(Setting::NcclIbHca).value_or("");
  if (IbDeviceFilter::parse(hca, &filter) != ncclSuccess) {
    *why = lastErrorMessage();
    return false;
  }
  int count = 0;
  ibv_device** devices = ibv_get_device_list(&count);
  if (!devices) {
    *why = std::string("ibv_get_device_list failed: ") + strerror(errno);
    return false;
  }
  *why = count == 0 ? "no RDMA device" : "no active port that NCCL_IB_HCA=" + hca + " allows";
  for (int d = 0; d < count; ++d) {
    const std::string name = ibv_get_device_name(devices[d]);
    ibv_context* context = ibv_open_device(devices[d]);
    if (!context) continue;
    ibv_device_attr attributes{};
    if (ibv_query_device(context, &attributes) == 0) {
      for (int port = 1; port <= attributes.phys_port_cnt; ++port) {
        ibv_port_attr portAttributes{};
        if (ibv_query_port(context, static_cast<uint8_t>(port), &portAttributes) != 0) continue;
        if (portAttributes.state != IBV_PORT_ACTIVE || !filter.allows(name, port)) continue;
        out->push_back(IbPortChoice{name, port});
      }
    }
    ibv_close_device(context);
  }
  ibv_free_device_list(devices);
  return !out->empty();
}

ncclResult_t IbDevice::open(const IbPortChoice& choice, std::shared_ptr<IbDevice>* out) {
  std::shared_ptr<IbDevice> device(new IbDevice);
  device->choice_ = choice;
  int count = 0;
  ibv_device** devices = ibv_get_device_list(&count);
  if (!devices) return fail(ncclSystemError, "ibverbs: ibv_get_device_list failed: %s", strerror(errno));
  for (int d = 0; d < count && !device->context_; ++d)
    if (choice.device == ibv_get_device_name(devices[d])) device->context_ = ibv_open_device(devices[d]);
  ibv_free_device_list(devices);
  if (!device->context_)
    return fail(ncclSystemError, "ibverbs: cannot open device %s: %s", choice.device.c_str(), strerror(errno));
  if (ibv_query_port(device->context_, static_cast<uint8_t>(choice.port), &device->portAttributes_) != 0)
    return fail(ncclSystemError, "ibverbs: cannot query %s port %d: %s", choice.device.c_str(), choice.port,
                strerror(errno));
  device->pd_ = ibv_alloc_pd(device->context_);
  if (!device->pd_)
    return fail(ncclSystemError, "ibverbs: cannot allocate a protection domain on %s: %s", choice.device.c_str(),
                strerror(errno));
  WEFT_CHECK(device->chooseGid());
  *out = std::move(device);
  return ncclSuccess;
}

// NCCL_IB_GID_INDEX if set; otherwise 0 on InfiniBand (the LID routes) and, on RoCE, the first
// GID holding an IPv4-mapped address (RoCE v2 over the port's IPv4 address, what NCCL picks).
ncclResult_t IbDevice::chooseGid() {
  const int tableSize = portAttributes_.gid_tbl_len;
  if (settingText(Setting::NcclIbGidIndex)) {
    gidIndex_ = static_cast<int>(settingInt(Setting::NcclIbGidIndex));
    if (gidIndex_ >= tableSize)
      return fail(ncclInvalidArgument, "NCCL_IB_GID_INDEX=%d: %s port %d has %d GIDs", gidIndex_,
                  choice_.device.c_str(), choice_.port, tableSize);
  } else if (ethernet()) {
    for (int index = 0; index < tableSize; ++index) {
      ibv_gid gid{};
      if (ibv_query_gid(context_, static_cast<uint8_t>(choice_.port), index, &gid) != 0) continue;
      const uint8_t* raw = gid.raw;
      const bool ipv4Mapped =
          std::all_of(raw, raw + 10, [](uint8_t b) { return b == 0; }) && raw[10] == 0xff && raw[11] == 0xff;
      if (ipv4Mapped) {
        gidIndex_ = index;
        break;
      }
    }
  }
  if (ibv_query_gid(context_, static_cast<uint8_t>(choice_.port), gidIndex_, &gid_) != 0)
    return fail(ncclSystemError, "ibverbs: cannot read GID %d of %s port %d: %s", gidIndex_, choice_.device.c_str(),
                choice_.port, strerror(errno));
  return ncclSuccess;
}

IbDevice::~IbDevice() {
  if (pd_) ibv_dealloc_pd(pd_);
  if (context_) ibv_close_device(context_);
}

}  // namespace weft
