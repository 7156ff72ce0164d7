// The worker store's data and semantics, exactly as PyTorch's TCPStore server
// behaves, with no sockets: a map from key to bytes, ADD on decimal-ASCII
// integers, COMPARE_SET, waiters that are woken when every key they wait for
// has been written, queues (QUEUE_PUSH/POP/LEN) and barriers.
//
// Queues live beside the keys, as in torch's server (queues_ of
// TCPStoreLibUvBackend.cpp): NumKeys, Get, Delete and ListKeys never see a
// queue; Check and Wait count a queue holding at least one item as a present
// key, and a push wakes at most one waiter (torch's wakeupOneWaitingClient).
//
// Waiters belong to an owner (a connection id). A mutation that completes a
// waiter queues its owner; the caller drains the queue with
// TakeReadyWaiters() after each request and notifies those owners. This keeps
// the store free of callbacks into the network layer.
//
// Thread-safety: none; used from the store server's io_context thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace muster::store {

class KeyValueStore {
 public:
  using Owner = uint64_t;

  KeyValueStore() = default;
  KeyValueStore(const KeyValueStore&) = delete;
  KeyValueStore& operator=(const KeyValueStore&) = delete;

  // Stores `value` under `key` (replacing any old value) and wakes waiters.
  void Set(const std::string& key, std::string value);

  // The value under `key`, or nullptr when absent. The pointer is valid until
  // the next mutation.
  const std::string* Get(const std::string& key) const;

  // TCPStore's COMPARE_SET: if `key` is absent, it is created with `desired`
  // only when `expected` is empty, and the reply is `desired` (created) or
  // `expected` (not created). If present, it is replaced by `desired` when its
  // value equals `expected`. Returns the reply value: the key's value after
  // the call in every case but "absent and expected non-empty".
  std::string CompareSet(const std::string& key, const std::string& expected, std::string desired);

  // Adds `delta` to the decimal-ASCII integer under `key` (absent = 0), stores
  // the sum as decimal ASCII, wakes waiters and returns the sum.
  // Errors (InvalidArgument): the existing value is not a decimal int64
  // (optional '-', digits only), or the sum overflows. The key is unchanged.
  Result<int64_t> Add(const std::string& key, int64_t delta);

  // Appends `value` to the value under `key`, creating it when absent; wakes
  // waiters.
  void Append(const std::string& key, const std::string& value);

  // True when every key in `keys` is present or names a non-empty queue
  // (true for no keys).
  bool Check(const std::vector<std::string>& keys) const;

  // Removes `key`; returns whether it was present. Waiters are unaffected: a
  // key that was written once while they waited stays counted.
  bool Delete(const std::string& key);

  size_t NumKeys() const { return data_.size(); }

  // What the limits of the store (StoreLimits) count: keys and queues, and
  // the bytes of their names and values (queue items included). Container
  // overhead is not counted.
  size_t NumEntries() const { return data_.size() + queues_.size(); }
  size_t Bytes() const { return bytes_; }
  // What pending waiters hold: the keys they were registered on (each
  // listing counted) and those keys' bytes. The store's bounds count them
  // beside NumEntries() and Bytes() (request_handler.h), so that waits on
  // keys that are never written can not grow the store without limit.
  size_t WaitedKeys() const { return waited_keys_; }
  size_t WaitedKeyBytes() const { return waited_key_bytes_; }

  // How a write changes NumEntries() and Bytes(), before it is made, so
  // that a request past a limit can be refused whole.
  enum class Write {
    kReplace,    // Set, CompareSet, Add, Barrier: the value replaces the old one
    kAppend,     // Append: the value is added to the old one
    kQueuePush,  // QueuePush: one more item in queue `key`
  };
  struct Growth {
    size_t keys = 0;    // 1 when the write creates `key`
    int64_t bytes = 0;  // may be negative: a shorter value replaces a longer one
  };
  Growth GrowthOf(const std::string& key, size_t value_bytes, Write how) const;

  // Every key (queues excluded), in byte order. torch's order is its hash
  // map's; clients treat the list as a set.
  std::vector<std::string> ListKeys() const;

  // Drops every key and every queue (a fresh namespace for a restarted job).
  // Pending waiters stay pending on the keys they still miss.
  void Clear() {
    data_.clear();
    queues_.clear();
    bytes_ = 0;
  }

  // Appends `value` to queue `key` (created when absent). The push counts as
  // a write of `key` for one waiter only: the oldest for which `key` was the
  // last missing key, else the oldest waiting on `key` at all.
  void QueuePush(const std::string& key, std::string value);

  struct Popped {
    int64_t length_before = 0;         // the queue's length before the pop
    std::optional<std::string> value;  // its oldest item; nullopt when it was empty
  };
  // Removes the oldest item of queue `key`. Never blocks: a client that wants
  // to block WAITs for `key` first, as torch's queue_pop(block=True) does.
  Popped QueuePop(const std::string& key);
  // The item QueuePop would return, or nullptr for no queue `key`. Valid
  // until the next mutation.
  const std::string* QueueFront(const std::string& key) const;

  // The number of items in queue `key`; 0 when there is no such queue.
  int64_t QueueLen(const std::string& key) const;

  // TCPStore's BARRIER: adds 1 to the decimal-ASCII counter under `key`
  // (absent = 0). Returns true when the count has reached `world_size`: every
  // waiter on `key` is woken (the earlier arrivals). Otherwise registers a
  // waiter for `owner` that completes at the next write of `key`, and returns
  // false; an arrival that does not complete the barrier wakes nobody, as in
  // torch's barrier handlers.
  // Errors (InvalidArgument): the existing value is not a decimal int64, or
  // the count overflows. Nothing is changed then.
  Result<bool> Barrier(Owner owner, const std::string& key, int64_t world_size);

  // Waits for all of `keys` on behalf of `owner`. Returns true when they are
  // all present now (nothing is registered); otherwise registers a waiter that
  // is queued for TakeReadyWaiters() once each missing key has been written,
  // and returns false. An owner may have several waiters.
  bool Wait(Owner owner, const std::vector<std::string>& keys);

  // Removes every pending waiter of `owner` (it cancelled, or disconnected),
  // including ones already queued as ready. Returns how many were removed.
  size_t CancelWaits(Owner owner);

  size_t PendingWaits(Owner owner) const;
  size_t TotalPendingWaits() const { return waiters_.size(); }

  // Owners whose waiters completed since the last call, one entry per
  // completed waiter, in completion order.
  std::vector<Owner> TakeReadyWaiters();

 private:
  using WaiterId = uint64_t;
  struct Waiter {
    Owner owner;
    std::vector<std::string> missing_keys;  // keys registered in waiting_on_
    size_t missing = 0;                     // how many of them are still unwritten
  };

  // Stores `value` under `key`, keeping bytes_, without waking anyone.
  void Put(const std::string& key, std::string value);
  void KeyWritten(const std::string& key);
  // Registers a waiter of `owner` on `keys` (each listed once per listing).
  void Register(Owner owner, std::vector<std::string> keys);
  // Counts one write of `key` for waiter `id` (listed on `key`); queues its
  // owner once nothing is missing. `list` is waiting_on_[key].
  void CountWrite(std::vector<WaiterId>& list, size_t index);
  void Ready(WaiterId id);
  // Erases a waiter, keeping WaitedKeys() and WaitedKeyBytes().
  void Forget(std::map<WaiterId, Waiter>::iterator waiter);
  bool QueueHasItems(const std::string& key) const;

  std::unordered_map<std::string, std::string> data_;
  std::unordered_map<std::string, std::deque<std::string>> queues_;    // never empty
  std::unordered_map<std::string, std::vector<WaiterId>> waiting_on_;  // key -> waiters
  std::map<WaiterId, Waiter> waiters_;
  std::unordered_map<Owner, std::vector<WaiterId>> by_owner_;
  std::vector<std::pair<Owner, WaiterId>> ready_;
  WaiterId next_waiter_ = 1;
  size_t bytes_ = 0;             // see Bytes()
  size_t waited_keys_ = 0;       // see WaitedKeys()
  size_t waited_key_bytes_ = 0;  // see WaitedKeyBytes()
};

}  // namespace muster::store
