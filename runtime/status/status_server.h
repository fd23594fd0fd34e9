// The status server: one thread per process (WEFT_STATUS_SERVER=1, the default) that sleeps
// on a Unix socket until `weft-info status` (or a peer whose call timed out) asks, then
// answers with where each of the process's communicators stands (status_report.h). It reads
// only what the collective threads publish for it (collective_progress.h, the statistics'
// atomics), so asking never stops or slows the job.
//
// The socket is in the abstract namespace, "weft-status.PID": no file to clean up after a
// crash, and a process is found by listing /proc/net/unix. Only the same user (or root) is
// answered (SO_PEERCRED); the answer holds host names, pids and collective names, nothing of
// the data.
//
// Requests, one line each: "status", "status stats" (with the statistics), "job KIND ID" (KIND
// one of those, for communicator ID's ranks on other hosts: remote_status.h), "dump" (each
// communicator writes its collective record to WEFT_DUMP_FILE at its next collective, or at
// once while one waits; the answer says where). WEFT_DUMP_SIGNAL (SIGUSR1 or SIGUSR2) asks
// the same by signal: its handler only writes a byte to a pipe the thread sleeps on; the
// previous handler is put back when the thread stops.
#pragma once

#include <cstdint>
#include <string>

#include "common/socket.h"
#include "nccl.h"

struct ncclComm;

namespace weft {

// Before bootstrap: the communicator's TCP endpoint for ranks on other hosts
// (remote_status.h), on `where`'s address; *port 0 when there is none (WEFT_STATUS_SERVER=0,
// or WEFT_ENCRYPTION=tls: the answers are not encrypted).
ncclResult_t statusServerListen(ncclComm* comm, const SocketAddress& where, uint16_t* port);
// A communicator whose initialization succeeded; the first one starts the thread.
void statusServerAdd(ncclComm* comm);
// Before the communicator is freed; the last one stops the thread (and closes its socket), so
// that a process without communicators runs no thread of weft's.
void statusServerRemove(ncclComm* comm);

inline constexpr char kStatusSocketPrefix[] = "weft-status.";
// The abstract socket name of process `pid` (without the leading NUL): the prefix and the pid.
std::string statusSocketName(int pid);
// Where one communicator stands, as the answer gives it; `dump` also asks the communicator to
// dump its record (served by the thread running its collectives).
struct RankStatus;
RankStatus communicatorStatus(ncclComm* comm, bool withStats, bool dump);
// The answer to `request`, as the thread gives it.
std::string answerStatusRequest(const std::string& request);

}  // namespace weft
