#include "worker_runtime/comm/gloo/shared_memory_allreduce.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>

#include "worker_runtime/comm/gloo/host_identity.h"

namespace muster::runtime {

// The segment's first page. Each word has a cache line of its own: ranks
// spin on `phase` while others add to `arrived`.
struct SharedMemoryAllreduce::Control {
  alignas(64) std::atomic<uint32_t> arrived;   // ranks at the current barrier
  alignas(64) std::atomic<uint32_t> phase;     // barriers passed (+ kGaveUp); the futex word
  alignas(64) std::atomic<uint32_t> sleepers;  // ranks in (or entering) a futex wait
};

namespace {

constexpr size_t kControlBytes = 4096;  // the slots start on a page of their own
static_assert(std::atomic<uint32_t>::is_always_lock_free &&
                  sizeof(std::atomic<uint32_t>) == sizeof(uint32_t),
              "the futex word must be a plain 32-bit word");

// How often a waiting rank looks at its peers' processes and the clock.
constexpr auto kWatchInterval = std::chrono::milliseconds(10);
// Spins before a waiting rank sleeps: a barrier usually completes within
// microseconds, and a futex sleep and wake cost about as much.
constexpr int kSpins = 200;

constexpr const char* kKeyPrefix = "muster_shm/";

// Set in the phase word by the rank that gives up on a barrier.
constexpr uint32_t kGaveUp = uint32_t{1} << 31;

// Shared (not process-private) futex calls: the word is in a segment that
// several processes map.
void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::nanoseconds timeout) {
  timespec ts{static_cast<time_t>(timeout.count() / 1'000'000'000),
              static_cast<long>(timeout.count() % 1'000'000'000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

std::string RandomSuffix() {
  std::random_device device;
  std::uniform_int_distribution<uint64_t> draw;
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(draw(device)));
  return text;
}

// Maps `fd` shared, read-write; the returned pointer unmaps at its end.
std::shared_ptr<void> MapShared(int fd, size_t bytes) {
  void* address = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (address == MAP_FAILED) return nullptr;
  return std::shared_ptr<void>(address, [bytes](void* a) { munmap(a, bytes); });
}

int OpenPidfd(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

Status StoreFailure(const std::string& what, const Status& status) {
  return Status::IoError("shared-memory allreduce setup: " + what + ": " + status.message());
}

// Publishes this rank's `value` under `name`/<rank> and returns every
// rank's, in rank order.
Result<std::vector<std::string>> Exchange(StoreClient& store, const std::string& name, int rank,
                                          int world_size, const std::string& value,
                                          std::chrono::milliseconds timeout) {
  const std::string base = kKeyPrefix + name + "/";
  if (Status s = store.Set(base + std::to_string(rank), value); !s.ok()) {
    return StoreFailure("set " + base + std::to_string(rank), s);
  }
  std::vector<std::string> values;
  for (int r = 0; r < world_size; ++r) {
    auto got = store.Get(base + std::to_string(r), timeout);
    if (!got.ok()) return StoreFailure("get " + base + std::to_string(r), got.status());
    values.push_back(std::move(got).value());
  }
  return values;
}

}  // namespace

size_t SharedMemoryAllreduce::SegmentBytes(int world_size) {
  static_assert(sizeof(Control) <= kControlBytes);
  return kControlBytes + 2 * static_cast<size_t>(world_size) * kChunkBytes;
}

Result<std::unique_ptr<SharedMemoryAllreduce>> SharedMemoryAllreduce::Join(
    StoreClient& store, int rank, int world_size, std::chrono::milliseconds timeout) {
  if (world_size < 2 || world_size > kMaxRanks) return std::unique_ptr<SharedMemoryAllreduce>();
  // Round 1: is every rank on this host (and which PIDs to watch)?
  const std::string identity = HostIdentity();
  auto peers =
      Exchange(store, "host", rank, world_size,
               std::to_string(getpid()) + " " + (identity.empty() ? "?" : identity), timeout);
  if (!peers.ok()) return peers.status();
  std::vector<pid_t> pids;
  for (const std::string& peer : *peers) {
    const size_t space = peer.find(' ');
    if (identity.empty() || space == std::string::npos || peer.substr(space + 1) != identity) {
      return std::unique_ptr<SharedMemoryAllreduce>();  // another host: every rank sees it
    }
    pids.push_back(static_cast<pid_t>(std::stol(peer.substr(0, space))));
  }

  // Rank 0 creates the segment and publishes its name ("" if it could not).
  const size_t bytes = SegmentBytes(world_size);
  std::string name;
  if (rank == 0) {
    name = "/muster-" + std::to_string(getpid()) + "-" + RandomSuffix();
    // posix_fallocate, not ftruncate: a /dev/shm too small for the segment
    // (containers often have 64 MiB) must refuse it here, not raise SIGBUS
    // at the first copy into a page it could not supply.
    const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || posix_fallocate(fd, 0, static_cast<off_t>(bytes)) != 0) {
      if (fd >= 0) shm_unlink(name.c_str());
      name.clear();
    }
    if (fd >= 0) close(fd);
    if (Status s = store.Set(std::string(kKeyPrefix) + "segment", name); !s.ok()) {
      if (!name.empty()) shm_unlink(name.c_str());
      return StoreFailure("set " + std::string(kKeyPrefix) + "segment", s);
    }
  } else {
    auto got = store.Get(std::string(kKeyPrefix) + "segment", timeout);
    if (!got.ok()) return StoreFailure("get " + std::string(kKeyPrefix) + "segment", got.status());
    name = std::move(got).value();
  }

  // Round 2: every rank maps it and watches its peers, or says it cannot.
  std::shared_ptr<void> mapping;
  std::vector<int> pidfds(static_cast<size_t>(world_size), -1);
  bool ready = !name.empty();
  if (ready) {
    const int fd = shm_open(name.c_str(), O_RDWR, 0600);
    if (fd >= 0) {
      mapping = MapShared(fd, bytes);
      close(fd);
    }
    ready = mapping != nullptr;
  }
  for (int r = 0; ready && r < world_size; ++r) {
    if (r == rank) continue;
    pidfds[static_cast<size_t>(r)] = OpenPidfd(pids[static_cast<size_t>(r)]);
    ready = pidfds[static_cast<size_t>(r)] >= 0;
  }
  auto readiness = Exchange(store, "ready", rank, world_size, ready ? "1" : "0", timeout);
  if (rank == 0 && !name.empty()) shm_unlink(name.c_str());  // every rank mapped it, or gave up
  const bool everyone_ready =
      readiness.ok() && std::all_of(readiness->begin(), readiness->end(),
                                    [](const std::string& value) { return value == "1"; });
  if (!everyone_ready) {
    for (int fd : pidfds) {
      if (fd >= 0) close(fd);
    }
    if (!readiness.ok()) return readiness.status();
    return std::unique_ptr<SharedMemoryAllreduce>();
  }
  auto joined = std::make_unique<SharedMemoryAllreduce>(
      std::span<std::byte>(static_cast<std::byte*>(mapping.get()), bytes), rank, world_size,
      timeout, std::move(pidfds));
  joined->mapping_ = std::move(mapping);
  return joined;
}

SharedMemoryAllreduce::SharedMemoryAllreduce(std::span<std::byte> segment, int rank, int world_size,
                                             std::chrono::milliseconds timeout,
                                             std::vector<int> peer_pidfds)
    : segment_(segment),
      control_(reinterpret_cast<Control*>(segment.data())),
      rank_(rank),
      world_size_(world_size),
      timeout_(timeout) {
  for (size_t r = 0; r < peer_pidfds.size(); ++r) {
    if (peer_pidfds[r] < 0) continue;
    watched_.push_back({peer_pidfds[r], POLLIN, 0});
    watched_ranks_.push_back(static_cast<int>(r));
  }
}

SharedMemoryAllreduce::~SharedMemoryAllreduce() {
  for (const pollfd& watched : watched_) close(watched.fd);
}

void SharedMemoryAllreduce::Interrupt() {
  uint32_t phase = control_->phase.load(std::memory_order_acquire);
  while ((phase & kGaveUp) == 0 && !control_->phase.compare_exchange_weak(
                                       phase, phase | kGaveUp, std::memory_order_seq_cst)) {
  }
  WakeSleepers();
}

std::byte* SharedMemoryAllreduce::Slot(size_t bank, int rank) const {
  return segment_.data() + kControlBytes +
         (bank * static_cast<size_t>(world_size_) + static_cast<size_t>(rank)) * kChunkBytes;
}

std::optional<SharedMemoryAllreduce::Failure> SharedMemoryAllreduce::AllReduce(
    void* data, size_t count, DataType type, ElementwiseReduction reduce) {
  if (failed_) return failed_;
  const size_t element = DataTypeSize(type);
  const size_t chunk_elements = kChunkBytes / element;
  std::byte* bytes = static_cast<std::byte*>(data);
  for (size_t offset = 0; offset < count; offset += chunk_elements) {
    const size_t n = std::min(chunk_elements, count - offset);
    const size_t bank = chunks_done_++ % 2;
    std::byte* out = bytes + offset * element;
    std::memcpy(Slot(bank, rank_), out, n * element);
    if (auto failure = Barrier()) return failure;
    // Every rank reduces the whole chunk, in rank order, straight into its
    // own buffer: identical results everywhere, and one barrier per chunk
    // where a reduce-scatter would need two and a copy out. The first two
    // slots are combined in one pass, not copied and then reduced.
    reduce(out, Slot(bank, 0), Slot(bank, 1), n);
    for (int r = 2; r < world_size_; ++r) reduce(out, out, Slot(bank, r), n);
  }
  return std::nullopt;
}

std::optional<SharedMemoryAllreduce::Failure> SharedMemoryAllreduce::Barrier() {
  // The phase cannot move before this rank arrives (unless a rank gives up),
  // so reading it first is safe.
  const uint32_t phase = control_->phase.load(std::memory_order_acquire);
  if ((phase & kGaveUp) != 0) return PeerGaveUp();
  if (control_->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 ==
      static_cast<uint32_t>(world_size_)) {
    // The last to arrive opens the barrier, unless a rank gave up on it
    // first (its arrival still counts). Nobody arrives at the next barrier
    // before seeing the new phase, so resetting the count first is safe.
    control_->arrived.store(0, std::memory_order_relaxed);
    uint32_t expected = phase;
    const bool opened = control_->phase.compare_exchange_strong(expected, (phase + 1) & ~kGaveUp,
                                                                std::memory_order_seq_cst);
    WakeSleepers();
    if (!opened) return PeerGaveUp();
    return std::nullopt;
  }
  // As Gloo's waits: the timeout bounds each wait for the peers, not the call.
  const auto entered = Clock::now();
  const auto deadline = entered + timeout_;
  auto next_watch = entered + kWatchInterval;
  for (int spins = 0;; ++spins) {
    const uint32_t current = control_->phase.load(std::memory_order_acquire);
    if (current != phase) {
      if ((current & kGaveUp) != 0) return PeerGaveUp();
      return std::nullopt;
    }
    if (spins < kSpins) {
      CpuRelax();
      continue;
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      return GiveUp(phase, CommError::Kind::kTimeout,
                    "no progress within the timeout of " + std::to_string(timeout_.count()) +
                        " ms (a peer is stalled)");
    }
    if (now >= next_watch) {
      if (std::optional<int> peer = ExitedPeer()) {
        return GiveUp(phase, CommError::Kind::kPeerFailed,
                      "the process of rank " + std::to_string(*peer) + " exited");
      }
      next_watch = now + kWatchInterval;
    }
    // Announced before the wait checks the phase again, so whoever changes
    // it sees a sleeper to wake (both sides seq_cst).
    control_->sleepers.fetch_add(1, std::memory_order_seq_cst);
    FutexWait(&control_->phase, phase, std::min(next_watch, deadline) - now);
    control_->sleepers.fetch_sub(1, std::memory_order_relaxed);
  }
}

std::optional<SharedMemoryAllreduce::Failure> SharedMemoryAllreduce::GiveUp(uint32_t phase,
                                                                            CommError::Kind kind,
                                                                            std::string detail) {
  uint32_t expected = phase;
  if (control_->phase.compare_exchange_strong(expected, phase | kGaveUp,
                                              std::memory_order_seq_cst)) {
    WakeSleepers();
    failed_ = Failure{kind, std::move(detail)};
    return failed_;
  }
  // The phase moved first: the barrier opened (this call goes on), or
  // another rank gave up on it.
  if ((expected & kGaveUp) != 0) return PeerGaveUp();
  return std::nullopt;
}

SharedMemoryAllreduce::Failure SharedMemoryAllreduce::PeerGaveUp() {
  failed_ =
      Failure{CommError::Kind::kPeerFailed, "another rank failed the shared-memory allreduce"};
  return *failed_;
}

void SharedMemoryAllreduce::WakeSleepers() {
  // Most barriers open while every waiter still spins: no syscall then.
  if (control_->sleepers.load(std::memory_order_seq_cst) != 0) FutexWakeAll(&control_->phase);
}

std::optional<int> SharedMemoryAllreduce::ExitedPeer() {
  // A pidfd polls readable once its process has exited (zombie or reaped).
  if (watched_.empty() || poll(watched_.data(), watched_.size(), 0) <= 0) return std::nullopt;
  for (size_t k = 0; k < watched_.size(); ++k) {
    if (watched_[k].revents != 0) return watched_ranks_[k];
  }
  return std::nullopt;
}

}  // namespace muster::runtime
