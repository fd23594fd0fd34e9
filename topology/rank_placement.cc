#include "topology/rank_placement.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/status.h"
#include "topology/affinity.h"
#include "topology/cpu_binding.h"
#include "topology/host_identity.h"

namespace weft {
namespace {

constexpr uint32_t kMagic = 0x31505257;  // "WRP1" little endian
constexpr uint32_t kMaxString = 4096;

void putU32(std::vector<uint8_t>* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void putI32(std::vector<uint8_t>* out, int32_t v) { putU32(out, static_cast<uint32_t>(v)); }
void putString(std::vector<uint8_t>* out, const std::string& s) {
  uint32_t n = static_cast<uint32_t>(std::min<size_t>(s.size(), kMaxString));
  putU32(out, n);
  out->insert(out->end(), s.begin(), s.begin() + n);
}

struct Reader {
  const uint8_t* p;
  size_t left;
  ncclResult_t u32(const char* field, uint32_t* v) {
    if (left < 4)
      return fail(ncclInvalidArgument, "rank placement record: truncated at field %s (%zu bytes left, need 4)", field,
                  left);
    *v = 0;
    for (int i = 0; i < 4; ++i) *v |= static_cast<uint32_t>(p[i]) << (8 * i);
    p += 4;
    left -= 4;
    return ncclSuccess;
  }
  ncclResult_t i32(const char* field, int* v) {
    uint32_t u = 0;
    WEFT_CHECK(u32(field, &u));
    *v = static_cast<int32_t>(u);
    return ncclSuccess;
  }
  ncclResult_t str(const char* field, std::string* s) {
    uint32_t n = 0;
    WEFT_CHECK(u32(field, &n));
    if (n > kMaxString)
      return fail(ncclInvalidArgument, "rank placement record: field %s claims %u bytes (at most %u)", field, n,
                  kMaxString);
    if (n > left)
      return fail(ncclInvalidArgument, "rank placement record: field %s claims %u bytes, only %zu left", field, n,
                  left);
    s->assign(reinterpret_cast<const char*>(p), n);
    p += n;
    left -= n;
    return ncclSuccess;
  }
};

}  // namespace

RankPlacement describeThisRank(const TopologyModel& model, int cudaDevice, const std::string& gpuBusId) {
  RankPlacement r;
  r.hostId = hostIdentity();
  r.cpuset = currentCpuBinding();
  r.numaNode = numaNodeOfCpuset(model, r.cpuset);
  r.pid = static_cast<int>(getpid());
  r.gpuIndex = cudaDevice;
  const GpuInfo* gpu = nullptr;
  if (cudaDevice >= 0) {
    gpu = gpuBusId.empty() ? model.gpuByIndex(cudaDevice) : model.gpuByBusId(gpuBusId);
    r.gpuBusId = gpu ? gpu->busId : normalizeBusId(gpuBusId);
  }
  int nic = -1;
  if (gpu != nullptr) {
    std::vector<int> near = nearestNics(model, gpu->index);
    if (!near.empty()) nic = near.front();
  }
  if (nic < 0) nic = nicForNuma(model, gpu ? gpu->numaNode : r.numaNode);
  if (nic >= 0) {
    r.nicName = model.nics[nic].name;
    r.nicSpeedGbps = model.nics[nic].speedGbps;
  }
  return r;
}

std::vector<uint8_t> encodeRankPlacement(const RankPlacement& r) {
  std::vector<uint8_t> out;
  putU32(&out, kMagic);
  putString(&out, r.hostId);
  putI32(&out, r.numaNode);
  putString(&out, r.cpuset);
  putI32(&out, r.gpuIndex);
  putString(&out, r.gpuBusId);
  putString(&out, r.nicName);
  putU32(&out, static_cast<uint32_t>(r.nicSpeedGbps * 1000.0 + 0.5));  // Mbit/s
  putI32(&out, r.pid);
  return out;
}

ncclResult_t decodeRankPlacement(const uint8_t* data, size_t size, RankPlacement* out) {
  if (data == nullptr && size != 0) return fail(ncclInvalidArgument, "rank placement record: null data");
  Reader rd{data, size};
  uint32_t magic = 0;
  WEFT_CHECK(rd.u32("magic", &magic));
  if (magic != kMagic)
    return fail(ncclInvalidArgument, "rank placement record: bad magic 0x%08x (another version of weft?)", magic);
  RankPlacement r;
  uint32_t mbps = 0;
  WEFT_CHECK(rd.str("hostId", &r.hostId));
  WEFT_CHECK(rd.i32("numaNode", &r.numaNode));
  WEFT_CHECK(rd.str("cpuset", &r.cpuset));
  WEFT_CHECK(rd.i32("gpuIndex", &r.gpuIndex));
  WEFT_CHECK(rd.str("gpuBusId", &r.gpuBusId));
  WEFT_CHECK(rd.str("nicName", &r.nicName));
  WEFT_CHECK(rd.u32("nicSpeed", &mbps));
  WEFT_CHECK(rd.i32("pid", &r.pid));
  if (rd.left != 0)
    return fail(ncclInvalidArgument, "rank placement record: %zu unexpected bytes after the last field", rd.left);
  if (r.hostId.empty()) return fail(ncclInvalidArgument, "rank placement record: empty host id");
  r.nicSpeedGbps = mbps / 1000.0;
  *out = std::move(r);
  return ncclSuccess;
}

}  // namespace weft
