// The etcd v3 JSON gateway's bodies for the calls the leader election makes
// (etcd 3.4's /v3/ paths; Debian 12 ships etcd 3.4.23): pure encoders and
// decoders, so every shape etcd sends is a unit test row
// (tests/unit/rdzv_replica_etcd_json_test.cc).
//
// Why the JSON gateway and not gRPC: it needs nothing but HTTP/1.1 and JSON,
// which musterd already links (Boost.Beast is header-only in Boost, nlohmann
// JSON), where gRPC would add Debian's grpc and protobuf, a code generator
// and etcd's .proto files to the build for five calls.
//
// The gateway's conventions, as etcd 3.4.23 answers:
//   - bytes (keys, values) are base64; int64 (IDs, TTLs, revisions) are JSON
//     strings on output (lease IDs exceed 2^53: never through a double);
//   - fields at their default are left out: no `kvs` for a missing key, no
//     `succeeded` for a failed transaction, no `TTL` from a keepalive of a
//     lease etcd no longer knows;
//   - a streaming call (lease keepalive) answers each request object with
//     {"result": {...}} and a newline;
//   - errors are {"error": "...", "message": "...", "code": <gRPC code>}, or
//     on a stream {"error": {"grpc_code": N, "message": "...", ...}}.
// Every decoder returns IoError naming the call and quoting what it could
// not read, or the error etcd sent.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace muster::rdzv::replica {

std::string Base64Encode(std::string_view bytes);
// nullopt when `text` is not standard base64 (with padding).
std::optional<std::string> Base64Decode(std::string_view text);

// POST /v3/lease/grant
std::string LeaseGrantBody(int64_t ttl_seconds);
struct GrantedLease {
  int64_t id = 0;
  int64_t ttl_seconds = 0;
};
Result<GrantedLease> ParseLeaseGrant(std::string_view body);

// POST /v3/lease/keepalive: the TTL it was renewed to, 0 when the lease is
// gone (etcd leaves TTL out, or sends -1).
std::string LeaseKeepAliveBody(int64_t lease_id);
Result<int64_t> ParseLeaseKeepAlive(std::string_view body);

// POST /v3/lease/revoke (its answer carries nothing the election needs).
std::string LeaseRevokeBody(int64_t lease_id);

// A key as etcd holds it.
struct KeyValue {
  std::string key;  // from a range of a prefix; empty when etcd left it out
  std::string value;
  int64_t create_revision = 0;
  int64_t lease = 0;
};

// POST /v3/kv/txn: create `key` = `value` with `lease` if it does not exist,
// else read it. `won`: the create committed, at `revision`; otherwise `held`
// is the key as it is (absent only if it vanished in between).
std::string CampaignBody(std::string_view key, std::string_view value, int64_t lease_id);
struct CampaignOutcome {
  bool won = false;
  int64_t revision = 0;  // won: the revision of the create, the key's create_revision
  std::optional<KeyValue> held;
};
Result<CampaignOutcome> ParseCampaign(std::string_view body);

// POST /v3/kv/range of one key.
std::string RangeBody(std::string_view key);
Result<std::optional<KeyValue>> ParseRange(std::string_view body);

// POST /v3/kv/range of every key under `prefix` (etcd's range_end: the
// prefix with its last byte incremented), in key order.
std::string RangePrefixBody(std::string_view prefix);
Result<std::vector<KeyValue>> ParseRangePrefix(std::string_view body);

// POST /v3/kv/put of `key` = `value`, bound to `lease_id` (0: none).
std::string PutBody(std::string_view key, std::string_view value, int64_t lease_id);
Status ParsePut(std::string_view body);

// POST /v3/kv/txn: put `key` = `value` only while `guard_key` was created at
// `guard_revision` (a leader writes only while its election key is its
// own); whether the put committed.
std::string GuardedPutBody(std::string_view guard_key, int64_t guard_revision, std::string_view key,
                           std::string_view value);
Result<bool> ParseGuardedPut(std::string_view body);

// The message of an error body etcd sent ("etcdserver: requested lease not
// found (code 5)"), or nullopt when `body` is not one.
std::optional<std::string> EtcdError(std::string_view body);

}  // namespace muster::rdzv::replica
