// TCP socket helpers shared by the bootstrap and the TCP transport: addresses, interface
// choice (NCCL_SOCKET_IFNAME), listening, connecting and whole-message I/O with deadlines.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "nccl.h"

namespace weft {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  std::string toString() const;    // "1.2.3.4:5" or "[::1]:5"
  std::string hostString() const;  // "1.2.3.4" or "::1"
  int port() const;
  void setPort(int port);
  bool isLoopback() const;
  bool sameHostAs(const SocketAddress& other) const;  // the same IP address, ports aside
};

// Whether a connection between these two ends stays inside this host, where the kernel carries
// it over the loopback device: the peer is a loopback address, or the local end's own address.
bool connectionWithinHost(const SocketAddress& local, const SocketAddress& peer);
// The same for a connected socket (false when its addresses cannot be read).
bool connectedWithinHost(int fd);

// Parses "host:port", "[v6]:port" or "host" (port 0); host may be a name. Fails with
// ncclInvalidArgument naming `what` (the variable the text came from).
ncclResult_t parseSocketAddress(const std::string& text, const char* what, SocketAddress* out);

// The address of the interface NCCL would pick: NCCL_SOCKET_IFNAME ("eth,ib" prefixes,
// "^docker" exclusion, "=eth0" exact) or else the first non-loopback, non-docker interface,
// then loopback. NCCL_SOCKET_FAMILY=AF_INET/AF_INET6 restricts the family.
ncclResult_t findInterfaceAddress(SocketAddress* out, std::string* interfaceName);
// Every interface that choice matches, one address each, in the system's order and of one
// family (IPv4 first): the first is findInterfaceAddress's. NCCL_SOCKET_IFNAME naming several
// interfaces gives weft's TCP rails (runtime/comm/network_rails.h).
struct NamedAddress {
  SocketAddress address;
  std::string interfaceName;
};
ncclResult_t findInterfaceAddresses(std::vector<NamedAddress>* out);

// A listening socket on `address` (port 0: any); `bound` receives the actual address.
ncclResult_t listenSocket(const SocketAddress& address, int* fd, SocketAddress* bound);
// Takes over `fd`, a listening TCP socket this process inherited (a launcher's, holding the
// rendezvous port since before the ranks started), if it listens on `wanted`'s family and port;
// otherwise ncclInvalidArgument with the reason, and `fd` is left alone.
ncclResult_t adoptListeningSocket(int fd, const SocketAddress& wanted, SocketAddress* bound);
// Connects, retrying refused connections (the listener may not be up yet) until `deadline`;
// a connection attempt that gets no answer (a black-holed address) also ends at `deadline`.
ncclResult_t connectSocket(const SocketAddress& address, const Deadline& deadline, int* fd);
// Accepts one connection, waiting until `deadline`.
ncclResult_t acceptSocket(int listenFd, const Deadline& deadline, int* fd, SocketAddress* peer);

// Whole-buffer send/receive with a deadline. A closed peer is ncclRemoteError.
ncclResult_t sendAll(int fd, const void* data, size_t bytes, const Deadline& deadline);
ncclResult_t recvAll(int fd, void* data, size_t bytes, const Deadline& deadline);

// The outcome of one non-blocking read or write on a byte stream (a socket, or TLS over one).
enum class StreamIo { Moved, WouldBlock, Closed, Failed };
// One non-blocking send (MSG_NOSIGNAL: a closed peer is Failed, not SIGPIPE) or recv of up to
// `bytes`; `*moved` says how many. Failed leaves the reason in errno.
StreamIo sendSome(int fd, const void* data, size_t bytes, size_t* moved);
StreamIo recvSome(int fd, void* data, size_t bytes, size_t* moved);
// The same send of two pieces, one after the other, in one system call.
StreamIo sendSomeOfTwo(int fd, const void* first, size_t firstBytes, const void* second, size_t secondBytes,
                       size_t* moved);

// A Unix socket address in the abstract namespace (no file; sun_path[0] == 0) named `name`
// (truncated to what fits); returns the length to pass to bind/connect.
socklen_t abstractUnixAddress(const std::string& name, sockaddr_un* address);
// The user id of the process at the other end of a connected Unix socket (SO_PEERCRED).
std::optional<uid_t> socketPeerUid(int fd);

void setNonBlocking(int fd, bool nonBlocking);
void setNoDelay(int fd);
// Every connected data socket: no Nagle delay, keepalive probes and TCP_USER_TIMEOUT within
// WEFT_TIMEOUT, so that a peer host that disappears is an error rather than a silent wait.
void tuneConnection(int fd);
void closeSocket(int& fd);

// Closes `fd` (closeSocket) when the scope it is declared in ends, whichever way it ends.
struct CloseSocketOnExit {
  int& fd;
  ~CloseSocketOnExit() { closeSocket(fd); }
};

}  // namespace weft
