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
//
// An https:// endpoint is reached over TLS (OpenSSL): etcd's certificate
// must chain to `EtcdTls::cacert` (the system's trusted CAs when empty) and
// name the endpoint's host (a DNS name or an IP address SAN); `cert` and
// `key` are the client certificate etcd's --client-cert-auth asks for.
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
  bool tls = false;  // https://
  bool operator==(const EtcdEndpoint&) const = default;
};

// "HOST:PORT", "http://HOST:PORT" or "https://HOST:PORT", comma-separated,
// no empty item; an IPv6 host in brackets. Errors name the bad item: a
// missing or bad port, an empty list.
Result<std::vector<EtcdEndpoint>> ParseEtcdEndpoints(std::string_view text);

// Files for TLS to etcd (PEM); empty: not given.
struct EtcdTls {
  // (Each `{}` lets a designated initializer leave the others out.)
  std::string cacert{};  // the CA etcd's certificate chains to; empty: the system's
  std::string cert{};    // this client's certificate, with `key`
  std::string key{};
  bool operator==(const EtcdTls&) const = default;
};

// Whether `tls` fits `endpoints`: cert and key come together, files are
// given only with an https:// endpoint, and each one loads (the error names
// the flag and the file). The client refuses calls with the same error.
Status CheckEtcdTls(const EtcdTls& tls, const std::vector<EtcdEndpoint>& endpoints);

class EtcdClient {
 public:
  EtcdClient(std::vector<EtcdEndpoint> endpoints, std::chrono::milliseconds timeout,
             const EtcdTls& tls = {});
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
  class TlsContext;

 private:
  // POSTs `body` to `path`; the answer's body (any HTTP status below 500).
  Result<std::string> Post(const char* call, std::string_view path, const std::string& body);

  std::vector<EtcdEndpoint> endpoints_;
  std::chrono::milliseconds timeout_;
  size_t current_ = 0;
  std::unique_ptr<Connection> connection_;
  std::shared_ptr<TlsContext> tls_;  // null: no https:// endpoint
  Status tls_status_;                // why the TLS context could not be made
};

}  // namespace muster::rdzv::replica
