#include "common/tls_session.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "common/settings.h"
#include "common/status.h"

namespace weft {

namespace {

constexpr std::string_view kSharedPskIdentity = "weft communicator key";
// TLS_AES_128_GCM_SHA256: the PSK's hash must be the suite's, and AES-GCM runs on AES-NI.
constexpr unsigned char kPskCipher[] = {0x13, 0x01};
constexpr const char* kPskSuites = "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256";

std::string openSslError() {
  char text[256] = "unknown error";
  if (unsigned long code = ERR_get_error()) ERR_error_string_n(code, text, sizeof(text));
  ERR_clear_error();
  return text;
}

}  // namespace

// What TLS writes collects here and leaves in one send(2) (TLS cuts data into records of at
// most 16 KiB: a send per record cost 6 times the system calls of plain TCP), with
// MSG_NOSIGNAL (OpenSSL's own socket BIO writes with write(2): a peer that closed would kill
// this process with SIGPIPE instead of failing the call). Allocated once per connection.
struct TlsSession::Outbox {
  Outbox(int socket, size_t capacity) : fd(socket), bytes(capacity) {}
  int fd;
  std::vector<char> bytes;
  size_t begin = 0, end = 0;
  bool endOfInput = false;  // the peer closed its side: OpenSSL asks (BIO_CTRL_EOF) to tell it from an error

  bool empty() const { return begin == end; }
  // Sends what is collected until the socket would block; false on a socket error.
  bool flush() {
    while (begin < end) {
      size_t sent = 0;
      const StreamIo io = sendSome(fd, bytes.data() + begin, end - begin, &sent);
      if (io != StreamIo::Moved) return io == StreamIo::WouldBlock;
      begin += sent;
    }
    begin = end = 0;
    return true;
  }
};

namespace {

int bioWrite(BIO* bio, const char* data, int bytes) {
  BIO_clear_retry_flags(bio);
  auto* outbox = static_cast<TlsSession::Outbox*>(BIO_get_data(bio));
  if (outbox->end + static_cast<size_t>(bytes) > outbox->bytes.size() && !outbox->flush()) return -1;
  if (outbox->begin == outbox->end) outbox->begin = outbox->end = 0;
  const size_t room = outbox->bytes.size() - outbox->end;
  if (room == 0) {
    BIO_set_retry_write(bio);
    return -1;
  }
  const size_t taken = std::min(room, static_cast<size_t>(bytes));
  memcpy(outbox->bytes.data() + outbox->end, data, taken);
  outbox->end += taken;
  return static_cast<int>(taken);
}
int bioRead(BIO* bio, char* data, int bytes) {
  BIO_clear_retry_flags(bio);
  auto* outbox = static_cast<TlsSession::Outbox*>(BIO_get_data(bio));
  ssize_t n = recv(outbox->fd, data, bytes, 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_read(bio);
  if (n == 0) outbox->endOfInput = true;
  return static_cast<int>(n);
}
// OpenSSL flushes after each handshake flight: that must reach the peer.
long bioControl(BIO* bio, int command, long, void*) {
  auto* outbox = static_cast<TlsSession::Outbox*>(BIO_get_data(bio));
  if (command == BIO_CTRL_EOF) return outbox->endOfInput ? 1 : 0;
  if (command != BIO_CTRL_FLUSH) return 0;
  BIO_clear_retry_flags(bio);
  if (!outbox->flush()) return -1;
  if (outbox->empty()) return 1;
  BIO_set_retry_write(bio);
  return -1;
}
int bioCreate(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

BIO* outboxBio(TlsSession::Outbox* outbox) {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "weft socket");
    if (m && (BIO_meth_set_write(m, bioWrite) != 1 || BIO_meth_set_read(m, bioRead) != 1 ||
              BIO_meth_set_ctrl(m, bioControl) != 1 || BIO_meth_set_create(m, bioCreate) != 1)) {
      BIO_meth_free(m);
      m = nullptr;
    }
    return m;
  }();
  BIO* bio = method ? BIO_new(method) : nullptr;
  if (bio) BIO_set_data(bio, outbox);
  return bio;
}

}  // namespace

// OpenSSL's PSK callbacks, with access to the session (its SSL's app data).
struct TlsCallbacks {
  // The pre-shared key as a TLS 1.3 session (RFC 8446's external PSK).
  static SSL_SESSION* pskSession(SSL* ssl, const MacKey& key) {
    const SSL_CIPHER* cipher = SSL_CIPHER_find(ssl, kPskCipher);
    SSL_SESSION* session = cipher ? SSL_SESSION_new() : nullptr;
    if (session && (SSL_SESSION_set1_master_key(session, key.bytes, sizeof(key.bytes)) != 1 ||
                    SSL_SESSION_set_cipher(session, cipher) != 1 ||
                    SSL_SESSION_set_protocol_version(session, TLS1_3_VERSION) != 1)) {
      SSL_SESSION_free(session);
      session = nullptr;
    }
    return session;
  }
  static int usePskSession(SSL* ssl, const EVP_MD* digest, const unsigned char** identity, size_t* identityBytes,
                           SSL_SESSION** session) {
    const auto* self = static_cast<const TlsSession*>(SSL_get_app_data(ssl));
    const SSL_CIPHER* cipher = SSL_CIPHER_find(ssl, kPskCipher);
    *session = nullptr;
    if (!self || (digest && cipher && digest != SSL_CIPHER_get_handshake_digest(cipher)))
      return 1;  // no PSK for that hash
    *session = pskSession(ssl, self->psk_.key);
    *identity = reinterpret_cast<const unsigned char*>(self->psk_.identity.data());
    *identityBytes = self->psk_.identity.size();
    return *session ? 1 : 0;
  }
  static int findPskSession(SSL* ssl, const unsigned char* identity, size_t identityBytes, SSL_SESSION** session) {
    const auto* self = static_cast<const TlsSession*>(SSL_get_app_data(ssl));
    *session = nullptr;
    MacKey key{};
    if (!self || !self->psk_.find ||
        !self->psk_.find(std::string_view(reinterpret_cast<const char*>(identity), identityBytes), &key))
      return 1;  // an unknown name: no PSK, and without certificates the handshake fails
    *session = pskSession(ssl, key);
    return *session ? 1 : 0;
  }
};

namespace {

using ContextPtr = std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)>;

ncclResult_t makeContext(const TlsSettings& settings, ContextPtr* out) {
  // No OPENSSL_cleanup at exit (see message_auth.cc): a thread may still be in a session then.
  OPENSSL_init_ssl(OPENSSL_INIT_NO_ATEXIT, nullptr);
  ContextPtr context(SSL_CTX_new(TLS_method()), SSL_CTX_free);  // each session says which end it is
  if (!context) return fail(ncclSystemError, "tls: cannot create a context: %s", openSslError().c_str());
  SSL_CTX* ctx = context.get();
  SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_num_tickets(ctx, 0);  // nothing resumes these sessions
  // A peer that closes without close_notify reads as closed; the frame layer above knows
  // whether a message was cut short.
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_TICKET);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_read_ahead(ctx, 1);  // several records per recv(2)
  SSL_CTX_set_default_read_buffer_len(ctx, 256 * 1024);
  if (!settings.usesCertificates()) {
    if (SSL_CTX_set_ciphersuites(ctx, kPskSuites) != 1)
      return fail(ncclSystemError, "tls: cannot select the PSK cipher suites: %s", openSslError().c_str());
    SSL_CTX_set_psk_use_session_callback(ctx, TlsCallbacks::usePskSession);
    SSL_CTX_set_psk_find_session_callback(ctx, TlsCallbacks::findPskSession);
    *out = std::move(context);
    return ncclSuccess;
  }
  if (SSL_CTX_use_certificate_chain_file(ctx, settings.certificateFile.c_str()) != 1)
    return fail(ncclInvalidArgument, "WEFT_TLS_CERT=%s: cannot load the certificate chain: %s",
                settings.certificateFile.c_str(), openSslError().c_str());
  if (SSL_CTX_use_PrivateKey_file(ctx, settings.privateKeyFile.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1)
    return fail(ncclInvalidArgument, "WEFT_TLS_KEY=%s: cannot load the private key of WEFT_TLS_CERT: %s",
                settings.privateKeyFile.c_str(), openSslError().c_str());
  if (SSL_CTX_load_verify_locations(ctx, settings.caFile.c_str(), nullptr) != 1)
    return fail(ncclInvalidArgument, "WEFT_TLS_CA=%s: cannot load the certificate authority: %s",
                settings.caFile.c_str(), openSslError().c_str());
  // Both ends prove a certificate the job's CA signed.
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  *out = std::move(context);
  return ncclSuccess;
}

}  // namespace

bool tlsRequested() { return settingString(Setting::WeftEncryption).value_or("none") == "tls"; }

bool tlsUsesCertificates() { return settingText(Setting::WeftTlsCert) != nullptr; }

ncclResult_t tlsSettingsFromEnv(TlsSettings* out) {
  *out = TlsSettings{};
  out->enabled = tlsRequested();
  out->certificateFile = settingString(Setting::WeftTlsCert).value_or("");
  out->privateKeyFile = settingString(Setting::WeftTlsKey).value_or("");
  out->caFile = settingString(Setting::WeftTlsCa).value_or("");
  if (!out->enabled) return ncclSuccess;
  const bool any = !out->certificateFile.empty() || !out->privateKeyFile.empty() || !out->caFile.empty();
  std::string missing;
  for (const auto& [variable, value] :
       {std::pair{"WEFT_TLS_CERT", &out->certificateFile}, std::pair{"WEFT_TLS_KEY", &out->privateKeyFile},
        std::pair{"WEFT_TLS_CA", &out->caFile}})
    if (value->empty()) missing += std::string(missing.empty() ? "" : ", ") + variable;
  if (any && !missing.empty())
    return fail(ncclInvalidArgument,
                "WEFT_ENCRYPTION=tls with certificates needs WEFT_TLS_CERT, WEFT_TLS_KEY and WEFT_TLS_CA together "
                "(missing: %s)",
                missing.c_str());
  return ncclSuccess;
}

TlsPsk TlsPsk::shared(const MacKey& key) {
  TlsPsk psk;
  psk.identity = kSharedPskIdentity;
  psk.key = key;
  psk.find = [key](std::string_view identity, MacKey* out) {
    if (identity != kSharedPskIdentity) return false;
    *out = key;
    return true;
  };
  return psk;
}

TlsSession::TlsSession(SSL* ssl, TlsPsk psk, std::unique_ptr<Outbox> outbox)
    : outbox_(std::move(outbox)), ssl_(ssl), psk_(std::move(psk)) {}

TlsSession::~TlsSession() {
  // One attempt at close_notify, never waiting: the peer may be gone.
  ERR_clear_error();
  if (SSL_is_init_finished(ssl_)) SSL_shutdown(ssl_);
  ERR_clear_error();
  (void)outbox_->flush();
  SSL_free(ssl_);
}

StreamIo TlsSession::flush() {
  if (!outbox_->flush()) {
    lastError_ = strerror(errno);
    return StreamIo::Failed;
  }
  return outbox_->empty() ? StreamIo::Moved : StreamIo::WouldBlock;
}

bool TlsSession::hasUnsentOutput() const { return !outbox_->empty(); }

TlsContext::~TlsContext() { SSL_CTX_free(context_); }

ncclResult_t TlsContext::create(const TlsSettings& settings, std::unique_ptr<TlsContext>* out) {
  ContextPtr context(nullptr, SSL_CTX_free);
  WEFT_CHECK(makeContext(settings, &context));
  out->reset(new TlsContext(context.release()));
  return ncclSuccess;
}

ncclResult_t TlsSession::start(int fd, bool client, const TlsContext& context, TlsPsk psk,
                               std::unique_ptr<TlsSession>* out, size_t outboxBytes) {
  auto outbox = std::make_unique<Outbox>(fd, outboxBytes);
  SSL* ssl = SSL_new(context.context_);  // holds its own reference to the context
  BIO* bio = ssl ? outboxBio(outbox.get()) : nullptr;
  if (!bio) {
    SSL_free(ssl);
    return fail(ncclSystemError, "tls: cannot create a session: %s", openSslError().c_str());
  }
  SSL_set_bio(ssl, bio, bio);
  std::unique_ptr<TlsSession> session(new TlsSession(ssl, std::move(psk), std::move(outbox)));
  SSL_set_app_data(ssl, session.get());
  if (client)
    SSL_set_connect_state(ssl);
  else
    SSL_set_accept_state(ssl);
  *out = std::move(session);
  return ncclSuccess;
}

StreamIo TlsSession::outcome(int result, size_t* moved) {
  if (result == 1) return StreamIo::Moved;
  *moved = 0;
  switch (SSL_get_error(ssl_, result)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE: return StreamIo::WouldBlock;
    case SSL_ERROR_ZERO_RETURN: return StreamIo::Closed;
    case SSL_ERROR_SYSCALL:
      lastError_ = errno ? strerror(errno) : "connection lost";
      ERR_clear_error();
      return StreamIo::Failed;
    default: lastError_ = openSslError(); return StreamIo::Failed;
  }
}

StreamIo TlsSession::write(const void* data, size_t bytes, size_t* moved) {
  ERR_clear_error();
  errno = 0;
  return outcome(SSL_write_ex(ssl_, data, bytes, moved), moved);
}

StreamIo TlsSession::read(void* data, size_t bytes, size_t* moved) {
  ERR_clear_error();
  errno = 0;
  return outcome(SSL_read_ex(ssl_, data, bytes, moved), moved);
}

ncclResult_t TlsSession::waitForSocket(const Deadline& deadline, const char* what) {
  if (deadline.expired()) return fail(ncclRemoteError, "tls: %s: no progress within the time-out", what);
  pollfd p{outbox_->fd, static_cast<short>(SSL_want_read(ssl_) ? POLLIN : POLLOUT), 0};
  if (poll(&p, 1, deadline.millisecondsLeft(100)) < 0 && errno != EINTR)
    return fail(ncclSystemError, "tls: %s: poll failed: %s", what, strerror(errno));
  return ncclSuccess;
}

ncclResult_t TlsSession::writeAll(const void* data, size_t bytes, const Deadline& deadline, const char* what) {
  const char* at = static_cast<const char*>(data);
  for (size_t done = 0;;) {
    size_t moved = 0;
    const StreamIo io = done < bytes ? write(at + done, bytes - done, &moved) : flush();
    if (io == StreamIo::Failed || io == StreamIo::Closed)
      return fail(ncclRemoteError, "tls: %s: %s", what, io == StreamIo::Closed ? "closed" : lastError_.c_str());
    if (io == StreamIo::Moved && done == bytes) return ncclSuccess;  // written, and the last flush sent it all
    done += moved;
    if (io == StreamIo::WouldBlock) WEFT_CHECK(waitForSocket(deadline, what));
  }
}

ncclResult_t TlsSession::readAll(void* data, size_t bytes, const Deadline& deadline, const char* what) {
  char* at = static_cast<char*>(data);
  for (size_t done = 0; done < bytes;) {
    size_t moved = 0;
    const StreamIo io = read(at + done, bytes - done, &moved);
    if (io == StreamIo::Failed || io == StreamIo::Closed)
      return fail(ncclRemoteError, "tls: %s: %s", what, io == StreamIo::Closed ? "closed" : lastError_.c_str());
    done += moved;
    // Reading may have run the handshake, whose answer waits in the buffer.
    if (flush() == StreamIo::Failed) return fail(ncclRemoteError, "tls: %s: %s", what, lastError_.c_str());
    if (io == StreamIo::WouldBlock) WEFT_CHECK(waitForSocket(deadline, what));
  }
  return ncclSuccess;
}

bool TlsSession::hasBufferedInput() const { return SSL_has_pending(ssl_) == 1; }

bool TlsSession::handshakeDone() const { return SSL_is_init_finished(ssl_) == 1; }

}  // namespace weft
