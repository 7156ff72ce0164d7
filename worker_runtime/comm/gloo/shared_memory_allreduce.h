// SharedMemoryAllreduce: allreduce among ranks that share one host, through
// a POSIX shared-memory segment instead of loopback TCP. Each rank copies
// its data in once and reduces every rank's copy, in rank order, into its
// own buffer: no kernel copies, no socket wake-ups, and identical results on
// every rank. Each rank reads W copies, so this is for the few ranks of one
// host (kMaxRanks).
//
// Setup (Join): each of its three store rounds (identity, segment name, ready) is bounded by
// the timeout. Every rank publishes its host identity (host_identity.h)
// and PID in the store. Where they differ (a world spanning hosts), the world is larger than
// kMaxRanks, or any rank cannot map the segment or watch its peers, every rank learns it and Join
// returns null: the caller keeps Gloo's TCP algorithms. Rank 0 creates the segment; once every rank
// has mapped it, rank 0 unlinks its name, so nothing is left in /dev/shm whatever happens later.
//
// Protocol: a call is cut into chunks of at most kChunkBytes. Chunk k uses
// bank k % 2 (one slot per rank): copy in; barrier; reduce every slot into
// the caller's buffer. One barrier per chunk suffices with two banks: a rank
// writes a bank again only after the barrier of the chunk in between, which
// every rank reaches after reading that bank.
//
// Failure: every wait (each barrier) is bounded by the timeout and watches
// the peers' processes (pidfd): a peer that exits fails the call within
// about 10 ms (CommError::kPeerFailed); a peer that stops answering fails it
// at the timeout (kTimeout). Opening a barrier and giving up on it are one
// compare-and-swap on the same word, so they cannot both happen: a barrier
// that opened succeeds on every rank, one given up on fails on every rank
// (the others with kPeerFailed), however late a rank arrives. After a
// failure every call fails.
//
// Thread-safety: one thread at a time per rank, like the communicator that
// owns it.
#pragma once

#include <poll.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/comm/host_reduction.h"
#include "worker_runtime/store/store_client.h"

namespace muster::runtime {

class SharedMemoryAllreduce {
 public:
  static constexpr size_t kChunkBytes = size_t{1} << 20;
  static constexpr int kMaxRanks = 8;

  struct Failure {
    CommError::Kind kind;
    std::string detail;
  };

  // The bytes of the segment a world of `world_size` ranks uses.
  static size_t SegmentBytes(int world_size);

  // Sets up the segment among the ranks of `store`'s namespace (one
  // communicator per namespace), or returns null where it cannot be used
  // (see above; every rank returns null alike). Errors: IoError when the
  // store fails, with the key.
  static Result<std::unique_ptr<SharedMemoryAllreduce>> Join(StoreClient& store, int rank,
                                                             int world_size,
                                                             std::chrono::milliseconds timeout);

  // Over a segment the caller mapped (SegmentBytes(world_size) bytes,
  // zero-filled, shared by every rank) and the pidfds of the peers to watch,
  // indexed by rank, -1 for ranks not watched (taken over; may be empty).
  SharedMemoryAllreduce(std::span<std::byte> segment, int rank, int world_size,
                        std::chrono::milliseconds timeout, std::vector<int> peer_pidfds);
  ~SharedMemoryAllreduce();
  SharedMemoryAllreduce(const SharedMemoryAllreduce&) = delete;
  SharedMemoryAllreduce& operator=(const SharedMemoryAllreduce&) = delete;

  // Reduces `count` elements at `data` in place across the ranks with
  // `reduce` (ElementwiseFor(type, op); an average is a sum the caller divides).
  // REQUIRES: type is kFloat32 or kFloat64.
  std::optional<Failure> AllReduce(void* data, size_t count, DataType type,
                                   ElementwiseReduction reduce);
  // Gives up on the current barrier for every rank (as a timeout would), so
  // every rank's call fails now; from any thread (it only touches the
  // segment's atomics).
  void Interrupt();

 private:
  struct Control;

  std::optional<Failure> Barrier();
  // Gives up on the barrier of `phase` for `kind`, unless it opened first.
  std::optional<Failure> GiveUp(uint32_t phase, CommError::Kind kind, std::string detail);
  // Another rank gave up: every later call fails too.
  Failure PeerGaveUp();
  void WakeSleepers();
  // The rank of a peer whose process has exited, if any.
  std::optional<int> ExitedPeer();
  std::byte* Slot(size_t bank, int rank) const;

  std::span<std::byte> segment_;
  Control* control_;
  int rank_;
  int world_size_;
  std::chrono::milliseconds timeout_;
  // The peers' pidfds (owned: closed at destruction), ready for poll(), and
  // the rank of each.
  std::vector<pollfd> watched_;
  std::vector<int> watched_ranks_;
  std::optional<Failure> failed_;
  size_t chunks_done_ = 0;  // chunks of all calls so far: picks the bank
  // The mapping, when Join made it (unmapped at destruction).
  std::shared_ptr<void> mapping_;
};

}  // namespace muster::runtime
