#include "store/key_value_store.h"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <string_view>
#include <utility>

namespace muster::store {

void KeyValueStore::Put(const std::string& key, std::string value) {
  auto [it, inserted] = data_.try_emplace(key);
  if (inserted) {
    bytes_ += key.size();
  } else {
    bytes_ -= it->second.size();
  }
  bytes_ += value.size();
  it->second = std::move(value);
}

void KeyValueStore::Set(const std::string& key, std::string value) {
  Put(key, std::move(value));
  KeyWritten(key);
}

KeyValueStore::Growth KeyValueStore::GrowthOf(const std::string& key, size_t value_bytes,
                                              Write how) const {
  Growth growth;
  growth.bytes = static_cast<int64_t>(value_bytes);
  if (how == Write::kQueuePush) {
    if (!queues_.contains(key)) {
      growth.keys = 1;
      growth.bytes += static_cast<int64_t>(key.size());
    }
    return growth;
  }
  auto it = data_.find(key);
  if (it == data_.end()) {
    growth.keys = 1;
    growth.bytes += static_cast<int64_t>(key.size());
  } else if (how == Write::kReplace) {
    growth.bytes -= static_cast<int64_t>(it->second.size());
  }
  return growth;
}

const std::string* KeyValueStore::Get(const std::string& key) const {
  auto it = data_.find(key);
  return it == data_.end() ? nullptr : &it->second;
}

std::string KeyValueStore::CompareSet(const std::string& key, const std::string& expected,
                                      std::string desired) {
  auto it = data_.find(key);
  if (it == data_.end()) {
    // torch: an empty `expected` means "create if absent"; anything else
    // fails and echoes `expected` back, so callers see their own value.
    if (!expected.empty()) return expected;
    Set(key, desired);
    return desired;
  }
  if (it->second == expected) {
    bytes_ -= it->second.size();
    bytes_ += desired.size();
    it->second = std::move(desired);
    KeyWritten(key);
  }
  return it->second;
}

namespace {

// The decimal int64 under `key` (absent = 0), for ADD and BARRIER. Strict
// parse: torch's std::stoll would also accept " 5" or "5abc"; every value a
// TCPStore client writes through ADD is plain decimal, and a non-number is a
// client bug worth surfacing rather than guessing.
Result<int64_t> DecimalValue(const std::string* value, std::string_view op) {
  if (value == nullptr) return int64_t{0};
  int64_t current = 0;
  const char* end = value->data() + value->size();
  auto [ptr, ec] = std::from_chars(value->data(), end, current);
  if (ec != std::errc() || ptr != end) {
    return Status::InvalidArgument(
        std::string(op) +
        " on a value that is not a decimal integer value_bytes=" + std::to_string(value->size()));
  }
  return current;
}

}  // namespace

Result<int64_t> KeyValueStore::Add(const std::string& key, int64_t delta) {
  Result<int64_t> current = DecimalValue(Get(key), "ADD");
  if (!current.ok()) return current.status();
  int64_t sum = 0;
  if (__builtin_add_overflow(*current, delta, &sum)) {
    return Status::InvalidArgument("ADD overflows int64 value=" + std::to_string(*current) +
                                   " delta=" + std::to_string(delta));
  }
  Set(key, std::to_string(sum));
  return sum;
}

Result<bool> KeyValueStore::Barrier(Owner owner, const std::string& key, int64_t world_size) {
  Result<int64_t> current = DecimalValue(Get(key), "BARRIER");
  if (!current.ok()) return current.status();
  int64_t count = 0;
  if (__builtin_add_overflow(*current, 1, &count)) {
    return Status::InvalidArgument("BARRIER count overflows int64 value=" +
                                   std::to_string(*current));
  }
  Put(key, std::to_string(count));
  if (count >= world_size) {
    KeyWritten(key);
    return true;
  }
  // Registered even though the key exists: it waits for the write that
  // completes the barrier, not for the key.
  Register(owner, {key});
  return false;
}

void KeyValueStore::Append(const std::string& key, const std::string& value) {
  auto [it, inserted] = data_.try_emplace(key);
  if (inserted) bytes_ += key.size();
  bytes_ += value.size();
  it->second.append(value);
  KeyWritten(key);
}

bool KeyValueStore::QueueHasItems(const std::string& key) const {
  return queues_.contains(key);  // empty queues are erased
}

bool KeyValueStore::Check(const std::vector<std::string>& keys) const {
  return std::all_of(keys.begin(), keys.end(), [this](const std::string& k) {
    return data_.contains(k) || QueueHasItems(k);
  });
}

bool KeyValueStore::Delete(const std::string& key) {
  auto it = data_.find(key);
  if (it == data_.end()) return false;
  bytes_ -= key.size() + it->second.size();
  data_.erase(it);
  return true;
}

std::vector<std::string> KeyValueStore::ListKeys() const {
  std::vector<std::string> keys;
  keys.reserve(data_.size());
  for (const auto& [key, value] : data_) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  return keys;
}

bool KeyValueStore::Wait(Owner owner, const std::vector<std::string>& keys) {
  // Every request of a torch client's get() comes with a WAIT, so no set is
  // built here. A key listed twice stays listed twice: KeyWritten counts it
  // down once per listing, and cancelling removes every listing.
  std::vector<std::string> missing;
  for (const auto& k : keys) {
    if (!data_.contains(k) && !QueueHasItems(k)) missing.push_back(k);
  }
  if (missing.empty()) return true;
  Register(owner, std::move(missing));
  return false;
}

void KeyValueStore::Register(Owner owner, std::vector<std::string> keys) {
  const WaiterId id = next_waiter_++;
  const size_t count = keys.size();
  Waiter waiter{owner, std::move(keys), count};
  for (const auto& k : waiter.missing_keys) {
    waiting_on_[k].push_back(id);
    waited_key_bytes_ += k.size();
  }
  waited_keys_ += count;
  waiters_.emplace(id, std::move(waiter));
  by_owner_[owner].push_back(id);
}

void KeyValueStore::Forget(std::map<WaiterId, Waiter>::iterator waiter) {
  waited_keys_ -= waiter->second.missing_keys.size();
  for (const auto& k : waiter->second.missing_keys) waited_key_bytes_ -= k.size();
  waiters_.erase(waiter);
}

void KeyValueStore::Ready(WaiterId id) {
  auto w = waiters_.find(id);
  const Owner owner = w->second.owner;
  ready_.emplace_back(owner, id);
  Forget(w);
  auto& owned = by_owner_[owner];
  std::erase(owned, id);
  if (owned.empty()) by_owner_.erase(owner);
}

void KeyValueStore::KeyWritten(const std::string& key) {
  auto it = waiting_on_.find(key);
  if (it == waiting_on_.end()) return;
  std::vector<WaiterId> ids = std::move(it->second);
  waiting_on_.erase(it);
  for (WaiterId id : ids) {
    auto w = waiters_.find(id);
    if (w == waiters_.end() || --w->second.missing > 0) continue;
    Ready(id);
  }
}

void KeyValueStore::CountWrite(std::vector<WaiterId>& list, size_t index) {
  const WaiterId id = list[index];
  list.erase(list.begin() + static_cast<std::ptrdiff_t>(index));
  auto w = waiters_.find(id);
  if (w != waiters_.end() && --w->second.missing == 0) Ready(id);
}

void KeyValueStore::QueuePush(const std::string& key, std::string value) {
  auto [queue, created] = queues_.try_emplace(key);
  if (created) bytes_ += key.size();
  bytes_ += value.size();
  queue->second.push_back(std::move(value));
  auto it = waiting_on_.find(key);
  if (it == waiting_on_.end()) return;
  std::vector<WaiterId>& list = it->second;
  // One item satisfies one waiter: prefer one it completes, so that an item
  // never sits in the queue while a pop-waiter (WAIT on this key alone) sleeps.
  size_t chosen = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    auto w = waiters_.find(list[i]);
    if (w != waiters_.end() && w->second.missing == 1) {
      chosen = i;
      break;
    }
  }
  CountWrite(list, chosen);
  if (list.empty()) waiting_on_.erase(it);
}

const std::string* KeyValueStore::QueueFront(const std::string& key) const {
  auto it = queues_.find(key);
  return it == queues_.end() ? nullptr : &it->second.front();
}

KeyValueStore::Popped KeyValueStore::QueuePop(const std::string& key) {
  auto it = queues_.find(key);
  if (it == queues_.end()) return {};
  Popped popped{static_cast<int64_t>(it->second.size()), std::move(it->second.front())};
  it->second.pop_front();
  bytes_ -= popped.value->size();
  // Erased when empty: an empty queue is invisible to clients anyway, and
  // popping many names must not leave a map entry behind for each.
  if (it->second.empty()) {
    bytes_ -= key.size();
    queues_.erase(it);
  }
  return popped;
}

int64_t KeyValueStore::QueueLen(const std::string& key) const {
  auto it = queues_.find(key);
  return it == queues_.end() ? 0 : static_cast<int64_t>(it->second.size());
}

size_t KeyValueStore::CancelWaits(Owner owner) {
  size_t removed = std::erase_if(ready_, [owner](const auto& r) { return r.first == owner; });
  auto it = by_owner_.find(owner);
  if (it == by_owner_.end()) return removed;
  for (WaiterId id : it->second) {
    auto w = waiters_.find(id);
    if (w == waiters_.end()) continue;
    // Unlink from every key list so that waits on never-written keys do not
    // accumulate after their owners are gone.
    for (const auto& k : w->second.missing_keys) {
      auto list = waiting_on_.find(k);
      if (list == waiting_on_.end()) continue;
      std::erase(list->second, id);
      if (list->second.empty()) waiting_on_.erase(list);
    }
    Forget(w);
    ++removed;
  }
  by_owner_.erase(it);
  return removed;
}

size_t KeyValueStore::PendingWaits(Owner owner) const {
  auto it = by_owner_.find(owner);
  return it == by_owner_.end() ? 0 : it->second.size();
}

std::vector<KeyValueStore::Owner> KeyValueStore::TakeReadyWaiters() {
  std::vector<Owner> owners;
  owners.reserve(ready_.size());
  for (const auto& r : ready_) owners.push_back(r.first);
  ready_.clear();
  return owners;
}

}  // namespace muster::store
