#include "common/message_auth.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "common/status.h"

namespace weft {

ncclResult_t randomBytes(void* out, size_t bytes) {
  auto* at = static_cast<uint8_t*>(out);
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = getrandom(at + got, bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(ncclSystemError, "getrandom failed: %s", strerror(errno));
    }
    got += static_cast<size_t>(n);
  }
  return ncclSuccess;
}

ncclResult_t randomNonce(Nonce* nonce) { return randomBytes(nonce->bytes, sizeof(nonce->bytes)); }

Mac computeMac(const void* key, size_t keyBytes, std::string_view label, std::initializer_list<MacPart> parts) {
  // Fetched once: libcrypto's algorithm lookup takes a lock and a search every time. And no
  // OPENSSL_cleanup at exit: a thread still computing MACs then (a root waiting for ranks until
  // its time-out) would lose its per-thread state to it, which LeakSanitizer reports as a leak.
  static EVP_MAC* const hmac = [] {
    OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, nullptr);
    return EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  }();
  Mac mac{};
  std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)> context(hmac ? EVP_MAC_CTX_new(hmac) : nullptr,
                                                                    EVP_MAC_CTX_free);
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest, 0), OSSL_PARAM_construct_end()};
  // A length prefix on the label keeps "ab"+"c" and "a"+"bc" apart.
  const uint32_t labelBytes = static_cast<uint32_t>(label.size());
  bool ok = context && EVP_MAC_init(context.get(), static_cast<const uint8_t*>(key), keyBytes, params) == 1 &&
            EVP_MAC_update(context.get(), reinterpret_cast<const uint8_t*>(&labelBytes), sizeof(labelBytes)) == 1 &&
            EVP_MAC_update(context.get(), reinterpret_cast<const uint8_t*>(label.data()), label.size()) == 1;
  for (const MacPart& part : parts)
    ok = ok && EVP_MAC_update(context.get(), static_cast<const uint8_t*>(part.data), part.bytes) == 1;
  size_t length = 0;
  ok = ok && EVP_MAC_final(context.get(), mac.bytes, &length, sizeof(mac.bytes)) == 1 && length == sizeof(mac.bytes);
  // A failure inside libcrypto (out of memory) leaves a MAC of random bytes: it matches nothing.
  if (!ok) (void)randomBytes(mac.bytes, sizeof(mac.bytes));
  return mac;
}

bool macsEqual(const Mac& a, const Mac& b) { return CRYPTO_memcmp(a.bytes, b.bytes, sizeof(a.bytes)) == 0; }

MacKey deriveKey(const void* parent, size_t parentBytes, std::string_view label, MacPart context) {
  const Mac mac = computeMac(parent, parentBytes, label, {context});
  MacKey key;
  static_assert(sizeof(key.bytes) == sizeof(mac.bytes));
  memcpy(key.bytes, mac.bytes, sizeof(key.bytes));
  return key;
}

}  // namespace weft
