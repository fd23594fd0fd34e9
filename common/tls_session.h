// TLS 1.3 (OpenSSL's libssl, no home-made cryptography) over one connected socket, for
// WEFT_ENCRYPTION=tls. Keyed either from a pre-shared key that both ends derive from the
// communicator's key (which never travels), or from certificates (WEFT_TLS_CERT, WEFT_TLS_KEY,
// WEFT_TLS_CA: each end proves it holds a certificate the CA signed). Reads and writes never
// block, and the first ones run the handshake: the transport drives it from the executor's
// progress loop like any traffic, so no pair of ranks waits on the other to start it (a blocking
// handshake inside connect would make the order in which ranks connect their peers matter). No
// session tickets, no renegotiation: nothing but the connection's own records moves after it.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/deadline.h"
#include "common/message_auth.h"
#include "common/socket.h"
#include "nccl.h"

struct ssl_st;
struct ssl_ctx_st;

namespace weft {

// What WEFT_ENCRYPTION and the WEFT_TLS_* files ask for.
struct TlsSettings {
  bool enabled = false;         // WEFT_ENCRYPTION=tls
  std::string certificateFile;  // WEFT_TLS_CERT (a PEM chain); empty: the pre-shared key
  std::string privateKeyFile;   // WEFT_TLS_KEY
  std::string caFile;           // WEFT_TLS_CA: the peers' certificates must chain to it
  bool usesCertificates() const { return !certificateFile.empty(); }
};
// Reads WEFT_ENCRYPTION and WEFT_TLS_*; an incomplete certificate set is an error naming what
// is missing.
ncclResult_t tlsSettingsFromEnv(TlsSettings* out);
// WEFT_ENCRYPTION=tls, and whether WEFT_TLS_CERT names certificates (then the job secret keys
// nothing), without checking the rest.
bool tlsRequested();
bool tlsUsesCertificates();

// What every session of a transport shares: the protocol, the suites, the certificates
// (loaded once, when it is made).
class TlsContext {
 public:
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  // A bad certificate, key or CA file is an error naming its variable.
  static ncclResult_t create(const TlsSettings& settings, std::unique_ptr<TlsContext>* out);

 private:
  friend class TlsSession;
  explicit TlsContext(ssl_ctx_st* context) : context_(context) {}
  ssl_ctx_st* context_;
};

// The pre-shared key of a session (unless its context holds certificates). A client names the
// key (`identity`) and holds it (`key`); a server finds the key a client named with `find`
// (false: no such key, and the handshake fails).
struct TlsPsk {
  std::string identity;
  MacKey key{};
  std::function<bool(std::string_view identity, MacKey* key)> find;
  // One key both ends hold, under a fixed name (the connections between ranks).
  static TlsPsk shared(const MacKey& key);
};

class TlsSession {
 public:
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // A session on the connected, non-blocking socket `fd`, as the client or the server; `psk`
  // keys it unless the context holds certificates. The session does not own `fd`, and must be
  // destroyed before `fd` is closed (it sends close_notify). Records collect in `outboxBytes`
  // (any size works; a stream's want several records per send, a short exchange's one).
  static constexpr size_t kStreamOutboxBytes = 256 * 1024;
  static constexpr size_t kExchangeOutboxBytes = 32 * 1024;
  static ncclResult_t start(int fd, bool client, const TlsContext& context, TlsPsk psk,
                            std::unique_ptr<TlsSession>* out, size_t outboxBytes = kStreamOutboxBytes);

  // Moves up to `bytes` (at least 1); `*moved` says how many. Until the handshake is done they
  // run it and move nothing. Failed leaves the reason in lastError().
  StreamIo write(const void* data, size_t bytes, size_t* moved);
  StreamIo read(void* data, size_t bytes, size_t* moved);
  const std::string& lastError() const { return lastError_; }
  // All of `bytes`, waiting (in poll) for the socket within `deadline`; an error names `what`
  // (for a bootstrap exchange, which is short and happens once).
  ncclResult_t writeAll(const void* data, size_t bytes, const Deadline& deadline, const char* what);
  ncclResult_t readAll(void* data, size_t bytes, const Deadline& deadline, const char* what);
  // Records are collected and leave together: flush() sends what the socket takes (Moved when
  // all of it left, WouldBlock when some is still here).
  StreamIo flush();
  bool hasUnsentOutput() const;
  // Records received but not yet read: poll(2) on the socket would not signal them.
  bool hasBufferedInput() const;
  bool handshakeDone() const;

  struct Outbox;  // the socket's side: records collected to leave together (tls_session.cc)

 private:
  TlsSession(ssl_st* ssl, TlsPsk psk, std::unique_ptr<Outbox> outbox);
  StreamIo outcome(int result, size_t* moved);
  ncclResult_t waitForSocket(const Deadline& deadline, const char* what);
  friend struct TlsCallbacks;

  std::unique_ptr<Outbox> outbox_;  // declared first: destroyed after ssl_'s use of it
  ssl_st* ssl_;
  TlsPsk psk_;  // read by the PSK callbacks during the handshake
  std::string lastError_;
};

}  // namespace weft
