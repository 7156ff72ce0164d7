// EtcdClient: the calls the leader election makes, over etcd's v3 JSON
// gateway (etcd_json.h) with HTTP/1.1 (Boost.Beast), blocking, each bounded
// by a deadline.
//
//   auto endpoints = ParseEtcdEndpoints("http://10.0.0.1:2379,10.0.0.2:2379");
//   EtcdClient etcd(*endpoints, std::chrono::milliseconds(500));
//   auto lease = etcd.GrantLease(2);
//
// Endpoints are tried in order: a call goes to the endpoint that answered
// last; when it fails there (refused, reset, timed out, an HTTP 5xx such as
// etcd's "no leader" 503) the next is tried, each with `timeout`, until one
// answers or every one failed once. One connection is kept open (HTTP
// keep-alive). etcd's refusals (an HTTP 4xx with its error body, e.g. an
// expired lease) are answers, not endpoint failures. Errors: IoError naming
// the call, every endpoint tried and why each failed, or etcd's error.
// TLS is not supported: an https:// endpoint is refused by the parser.
//
// Thread-safety: none; one thread uses a client (it runs its own
// io_context).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "rendezvous/replica/etcd_json.h"

namespace muster::rdzv::replica {

struct EtcdEndpoint {
  std::string host;
  uint16_t port = 0;
  bool operator==(const EtcdEndpoint&) const = default;
};

// "HOST:PORT" or "http://HOST:PORT", comma-separated, no empty item; an
// IPv6 host in brackets. Errors name the bad item: an https:// endpoint
// ("TLS to etcd is not supported"), a missing or bad port, an empty list.
Result<std::vector<EtcdEndpoint>> ParseEtcdEndpoints(std::string_view text);

class EtcdClient {
 public:
  EtcdClient(std::vector<EtcdEndpoint> endpoints, std::chrono::milliseconds timeout);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  Result<GrantedLease> GrantLease(int64_t ttl_seconds);
  // The TTL the lease was renewed to; 0 when etcd no longer knows it.
  Result<int64_t> KeepAlive(int64_t lease_id);
  Status RevokeLease(int64_t lease_id);
  Result<CampaignOutcome> Campaign(std::string_view key, std::string_view value, int64_t lease_id);
  Result<std::optional<KeyValue>> Read(std::string_view key);
  Result<std::vector<KeyValue>> ReadPrefix(std::string_view prefix);
  Status Put(std::string_view key, std::string_view value, int64_t lease_id);
  // Whether the put committed: false when `guard_key` is no longer the one
  // created at `guard_revision` (etcd_json.h, GuardedPutBody).
  Result<bool> GuardedPut(std::string_view guard_key, int64_t guard_revision, std::string_view key,
                          std::string_view value);

  // The endpoint the last answer came from ("HOST:PORT"), for logs.
  std::string current_endpoint() const;

  class Connection;

 private:
  // POSTs `body` to `path`; the answer's body (any HTTP status below 500).
  Result<std::string> Post(const char* call, std::string_view path, const std::string& body);

  std::vector<EtcdEndpoint> endpoints_;
  std::chrono::milliseconds timeout_;
  size_t current_ = 0;
  std::unique_ptr<Connection> connection_;
};

}  // namespace muster::rdzv::replica
