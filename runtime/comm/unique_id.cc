#include "runtime/comm/unique_id.h"

#include <netinet/in.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "common/hash.h"
#include "common/log.h"
#include "common/message_auth.h"
#include "common/settings.h"
#include "common/status.h"
#include "common/tls_session.h"

namespace weft {

namespace {

// Packed by hand so that the id is the same whatever the compiler's padding.
struct IdLayout {
  uint64_t magic;
  uint8_t secret[16];
  uint8_t rootAtRankZero;
  uint8_t reserved[3];
  uint32_t addressLength;
  uint8_t address[sizeof(sockaddr_in6)];
};
static_assert(sizeof(IdLayout) <= NCCL_UNIQUE_ID_BYTES);

}  // namespace

void encodeUniqueId(const UniqueIdContents& contents, ncclUniqueId* id) {
  memset(id, 0, sizeof(*id));
  IdLayout layout{};
  layout.magic = kUniqueIdMagic;
  memcpy(layout.secret, contents.secret.bytes, sizeof(layout.secret));
  layout.rootAtRankZero = contents.rootAtRankZero ? 1 : 0;
  layout.addressLength = contents.root.length;
  memcpy(layout.address, &contents.root.storage, contents.root.length);
  memcpy(id->internal, &layout, sizeof(layout));
}

ncclResult_t decodeUniqueId(const ncclUniqueId& id, UniqueIdContents* contents) {
  IdLayout layout;
  memcpy(&layout, id.internal, sizeof(layout));
  if (layout.magic != kUniqueIdMagic)
    return fail(ncclInvalidArgument, "commId: not a weft unique id (bad magic); was it made by ncclGetUniqueId?");
  if (layout.addressLength == 0 || layout.addressLength > sizeof(layout.address))
    return fail(ncclInvalidArgument, "commId: corrupt unique id (address length %u)", layout.addressLength);
  contents->root = SocketAddress{};
  memcpy(&contents->root.storage, layout.address, layout.addressLength);
  contents->root.length = layout.addressLength;
  if (contents->root.storage.ss_family != AF_INET && contents->root.storage.ss_family != AF_INET6)
    return fail(ncclInvalidArgument, "commId: corrupt unique id (address family %d)", contents->root.storage.ss_family);
  memcpy(contents->secret.bytes, layout.secret, sizeof(layout.secret));
  contents->rootAtRankZero = layout.rootAtRankZero != 0;
  return ncclSuccess;
}

ncclResult_t randomSecret(BootstrapSecret* secret) { return randomBytes(secret->bytes, sizeof(secret->bytes)); }

BootstrapSecret secretFromText(const char* text) {
  BootstrapSecret secret{};
  if (strlen(text) == 32) {
    bool hex = true;
    for (int i = 0; i < 16 && hex; ++i) {
      unsigned value;
      hex = sscanf(text + 2 * i, "%2x", &value) == 1;
      secret.bytes[i] = static_cast<uint8_t>(value);
    }
    if (hex) return secret;
  }
  uint64_t a = fnv1a(text, 0x9e3779b97f4a7c15ull), b = fnv1a(text, 0xc2b2ae3d27d4eb4full);
  memcpy(secret.bytes, &a, 8);
  memcpy(secret.bytes + 8, &b, 8);
  return secret;
}

ncclResult_t allowPublicSecret(const char* derivedFrom) {
  // TLS keyed from it would encrypt with a key anyone on the path computes (the root's nonce
  // travels in clear); certificates do not depend on it.
  if (tlsRequested() && !tlsUsesCertificates())
    return fail(ncclInvalidUsage,
                "WEFT_ENCRYPTION=tls: TLS would be keyed from a secret computed from %s, which is not secret; set "
                "WEFT_SECRET (32 hex digits) on every rank, or WEFT_TLS_CERT, WEFT_TLS_KEY and WEFT_TLS_CA",
                derivedFrom);
  const char* auth = settingText(Setting::WeftAuth);
  if (auth && strcmp(auth, "required") == 0)
    return fail(ncclInvalidUsage,
                "WEFT_AUTH=required: the bootstrap secret would be computed from %s, which is not secret; set "
                "WEFT_SECRET (32 hex digits) on every rank, or use ncclGetUniqueId's random id",
                derivedFrom);
  static std::once_flag warned;
  std::call_once(warned, [&] {
    WEFT_WARN(
        "the bootstrap is not authenticated: its secret is computed from %s, which anyone who can reach the "
        "root can compute too; set WEFT_SECRET on every rank (WEFT_AUTH=required makes this an error)",
        derivedFrom);
  });
  return ncclSuccess;
}

}  // namespace weft
