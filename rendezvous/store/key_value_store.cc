#include "rendezvous/store/key_value_store.h"

#include <algorithm>
#include <charconv>
#include <utility>

namespace muster::store {

void KeyValueStore::Set(const std::string& key, std::string value) {
  data_[key] = std::move(value);
  KeyWritten(key);
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
    it->second = std::move(desired);
    KeyWritten(key);
  }
  return it->second;
}

Result<int64_t> KeyValueStore::Add(const std::string& key, int64_t delta) {
  int64_t current = 0;
  auto it = data_.find(key);
  if (it != data_.end()) {
    // Strict parse: torch's std::stoll would also accept " 5" or "5abc"; every
    // value a TCPStore client writes through ADD is plain decimal, and a
    // non-number is a client bug worth surfacing rather than guessing.
    const std::string& s = it->second;
    const char* end = s.data() + s.size();
    auto [ptr, ec] = std::from_chars(s.data(), end, current);
    if (ec != std::errc() || ptr != end) {
      return Status::InvalidArgument("ADD on a value that is not a decimal integer value_bytes=" +
                                     std::to_string(s.size()));
    }
  }
  int64_t sum = 0;
  if (__builtin_add_overflow(current, delta, &sum)) {
    return Status::InvalidArgument("ADD overflows int64 value=" + std::to_string(current) +
                                   " delta=" + std::to_string(delta));
  }
  Set(key, std::to_string(sum));
  return sum;
}

void KeyValueStore::Append(const std::string& key, const std::string& value) {
  data_[key].append(value);
  KeyWritten(key);
}

bool KeyValueStore::Check(const std::vector<std::string>& keys) const {
  return std::all_of(keys.begin(), keys.end(),
                     [this](const std::string& k) { return data_.contains(k); });
}

bool KeyValueStore::Delete(const std::string& key) { return data_.erase(key) > 0; }

bool KeyValueStore::Wait(Owner owner, const std::vector<std::string>& keys) {
  // Every request of a torch client's get() comes with a WAIT, so no set is
  // built here. A key listed twice stays listed twice: KeyWritten counts it
  // down once per listing, and cancelling removes every listing.
  std::vector<std::string> missing;
  for (const auto& k : keys) {
    if (!data_.contains(k)) missing.push_back(k);
  }
  if (missing.empty()) return true;

  const WaiterId id = next_waiter_++;
  const size_t count = missing.size();
  Waiter waiter{owner, std::move(missing), count};
  for (const auto& k : waiter.missing_keys) waiting_on_[k].push_back(id);
  waiters_.emplace(id, std::move(waiter));
  by_owner_[owner].push_back(id);
  return false;
}

void KeyValueStore::KeyWritten(const std::string& key) {
  auto it = waiting_on_.find(key);
  if (it == waiting_on_.end()) return;
  std::vector<WaiterId> ids = std::move(it->second);
  waiting_on_.erase(it);
  for (WaiterId id : ids) {
    auto w = waiters_.find(id);
    if (w == waiters_.end() || --w->second.missing > 0) continue;
    const Owner owner = w->second.owner;
    ready_.emplace_back(owner, id);
    waiters_.erase(w);
    auto& owned = by_owner_[owner];
    std::erase(owned, id);
    if (owned.empty()) by_owner_.erase(owner);
  }
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
    waiters_.erase(w);
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
