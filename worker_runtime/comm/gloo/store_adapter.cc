#include "worker_runtime/comm/gloo/store_adapter.h"

#include <gloo/common/error.h>

namespace muster::runtime {

GlooStoreAdapter::GlooStoreAdapter(StoreClient& store, std::chrono::milliseconds timeout)
    : store_(store), timeout_(timeout) {}

void GlooStoreAdapter::set(const std::string& key, const std::vector<char>& data) {
  std::lock_guard<std::mutex> lock(mutex_);
  Status status = store_.Set(Key(key), std::string_view(data.data(), data.size()));
  if (!status.ok()) throw gloo::IoException("store set '" + key + "': " + status.message());
}

std::vector<char> GlooStoreAdapter::get(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  Result<std::string> value = store_.Get(Key(key), timeout_);
  if (!value.ok()) {
    throw gloo::IoException("store get '" + key + "': " + value.status().message());
  }
  return std::vector<char>(value->begin(), value->end());
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void GlooStoreAdapter::wait(const std::vector<std::string>& keys,
                            const std::chrono::milliseconds& timeout) {
  std::vector<std::string> prefixed;
  prefixed.reserve(keys.size());
  for (const std::string& key : keys) prefixed.push_back(Key(key));
  // Gloo passes kNoTimeout (zero) to mean "no deadline"; ours always has one.
  const auto deadline = timeout.count() > 0 ? timeout : timeout_;
  std::lock_guard<std::mutex> lock(mutex_);
  Status status = store_.Wait(prefixed, deadline);
  if (!status.ok()) {
    throw gloo::IoException("store wait for " + std::to_string(keys.size()) + " key(s) (first '" +
                            (keys.empty() ? "" : keys[0]) + "'): " + status.message());
  }
}

}  // namespace muster::runtime
