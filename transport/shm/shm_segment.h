// A rank's shared-memory segment: a memfd that holds its doorbell and one receive ring per
// local peer. Peers receive its descriptor from the fd broker (transport/fd_broker.h), so no
// name is left in /dev/shm if a process dies, and a peer's mapping outlives the owner.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "nccl.h"
#include "transport/transport.h"  // kPeerFailureBytes

namespace weft {

constexpr uint64_t kShmSegmentMagic = 0x7765667453484d31ull;  // "weftSHM1"
// Bounds on a peer segment's geometry (its header is the peer's word): WEFT_SHM_SLOT_BYTES'
// range, and more local ranks than any machine has cores.
constexpr uint64_t kMaxShmSlotBytes = 1ull << 30;
constexpr int kMaxShmLocalRanks = 1 << 16;

// Largest message of a mailbox (Connection::mailboxPost).
constexpr size_t kShmMailboxBytes = 16 << 10;

// One mailbox message: the sender writes the data, then the sequence (release). The first 48
// bytes share the sequence's cache line, so a small message costs the reader one line.
struct alignas(64) ShmMailbox {
  std::atomic<uint64_t> sequence;  // call number of the message here, 0: none yet
  uint64_t bytes;
  char data[kShmMailboxBytes];
};

// Cache-line separated so that the writer of one field never invalidates the reader of another.
struct alignas(64) ShmRingHeader {
  alignas(64) std::atomic<uint64_t> tail;  // messages published (written by the sender)
  alignas(64) std::atomic<uint64_t> head;  // messages consumed (written by the receiver)
  alignas(64) uint64_t sizes[64];          // byte size of each slot's message
  ShmMailbox mailboxes[2];                 // by call number parity (see Connection::mailboxPost)
};

struct alignas(4096) ShmSegmentHeader {
  uint64_t magic;
  int32_t pid;
  int32_t localSize;
  uint64_t slotBytes;
  uint32_t slots;
  alignas(64) std::atomic<uint32_t> doorbell;  // futex word: bumped to wake a sleeping owner
  alignas(64) std::atomic<uint32_t> sleeping;  // owner is (about to be) asleep on the doorbell
  alignas(64) std::atomic<uint32_t> aborted;   // owner aborted its communicator
  // Owner's communicator failed a call (its error, NUL-terminated, written before the flag): it
  // sends nothing more for the calls in flight (Connection::markFailed).
  alignas(64) std::atomic<uint32_t> failed;
  char failure[kPeerFailureBytes];
};

struct ShmLayout {
  size_t slotBytes;
  uint32_t slots;
  int localSize;

  size_t ringBytes() const { return sizeof(ShmRingHeader) + slotBytes * slots; }
  size_t totalBytes() const { return sizeof(ShmSegmentHeader) + ringBytes() * localSize; }
  // The ring in which the rank with local index `senderLocal` sends to the segment's owner.
  size_t ringOffset(int senderLocal) const { return sizeof(ShmSegmentHeader) + ringBytes() * senderLocal; }
};

class ShmSegment {
 public:
  ShmSegment() = default;
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // Creates this rank's own segment (sparse: pages are faulted in ring by ring).
  ncclResult_t create(const ShmLayout& layout);
  // Maps a peer's segment (its descriptor, which the segment now owns), read from its header.
  ncclResult_t open(int fd, int peerRank);

  ShmSegmentHeader* header() const { return static_cast<ShmSegmentHeader*>(base_); }
  // The geometry as created, or as read and checked once when opened (never re-read).
  ShmLayout layout() const;
  ShmRingHeader* ring(int senderLocal) const;
  char* slot(int senderLocal, uint64_t index) const;
  // Faults in the pages of one ring in this mapping for writing, once, outside any timed call,
  // leaving their contents as they are.
  void prefaultRing(int senderLocal) const;
  int fd() const { return fd_; }

 private:
  void* base_ = nullptr;
  size_t bytes_ = 0;
  ShmLayout layout_{};
  int fd_ = -1;
};

// Futex helpers on a shared (cross-process) word.
void futexWake(std::atomic<uint32_t>* word);
// Sleeps while *word == expected, at most timeoutMicros.
void futexWait(std::atomic<uint32_t>* word, uint32_t expected, long timeoutMicros);

}  // namespace weft
