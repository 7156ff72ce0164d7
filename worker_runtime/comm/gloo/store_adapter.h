// GlooStoreAdapter: Gloo's rendezvous store (set/get/wait) over muster's
// StoreClient, so Gloo exchanges its addresses through the generation's
// store. Keys are placed under "gloo/" inside the client's prefix.
//
// get() waits for the key (as Gloo expects) up to `timeout`; wait() uses the
// timeout Gloo passes, or `timeout` when it passes none. Every failure
// throws gloo::IoException naming the key and the store's error.
//
// Thread-safety: calls are serialized by a mutex (StoreClient is not
// thread-safe). The StoreClient must outlive the adapter.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "worker_runtime/store/store_client.h"

namespace muster::runtime {

class GlooStoreAdapter final : public gloo::rendezvous::Store {
 public:
  GlooStoreAdapter(StoreClient& store, std::chrono::milliseconds timeout);

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  static std::string Key(const std::string& key) { return "gloo/" + key; }

  std::mutex mutex_;
  StoreClient& store_;  // GUARDED_BY(mutex_)
  const std::chrono::milliseconds timeout_;
};

}  // namespace muster::runtime
