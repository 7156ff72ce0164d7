// Applies one decoded TCPStore request to a KeyValueStore and says what the
// connection must do next, with no sockets: the pure core of a store session.
//
// Replies follow torch's server byte for byte. Where torch's server would
// throw and drop the connection (GET of a missing key, ADD on a non-number)
// the outcome is "close" with a reason. Three deliberate additions:
//   - Legacy clients cannot cancel a WAIT that timed out on their side, and
//     torch 1.13 serializes every operation of a client (one op in flight), so
//     a new request from a legacy connection that still has a pending WAIT
//     means the client gave up: the stale waiter is dropped instead of later
//     sending a stray STOP_WAITING byte that would desynchronize the stream.
//   - A connection may hold at most HandlerLimits::max_pending_waits waiters
//     (WAITs and BARRIERs together).
//   - A LIST_KEYS reply larger than HandlerLimits::max_list_keys_reply_bytes
//     closes the connection instead of being built; so does any reply larger
//     than HandlerLimits::reply_room (what the connection may still queue).
//   - Pending waiters' keys count against max_keys and max_bytes: a WAIT or
//     BARRIER past them closes its connection.
//   - The store as a whole holds at most HandlerLimits::max_keys keys (queues
//     included) and max_bytes bytes of names and values (KeyValueStore::
//     Bytes()). A write that would pass either limit is not made, and the
//     connection that sent it is closed, as torch's server closes one whose
//     request it cannot serve; the store and other connections go on. Writes
//     that shrink or keep the store's size always pass.
// Torch 2.1 and modern connections keep an unanswered WAIT until CANCEL_WAIT,
// as their clients send it on timeout. A blocking queue pop is a WAIT on the
// queue's name followed by QUEUE_POP (torch's client does both), so pending
// pops and barriers are waiters like any other: dropped when their
// connection closes, or by CANCEL_WAIT.
//
// Waiters completed by the request (of any connection) are left in
// store.TakeReadyWaiters(); the caller delivers kStopWaiting to each owner.
//
// Thread-safety: none; same thread as the store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "store/key_value_store.h"
#include "store/tcpstore_protocol.h"

namespace muster::store {

inline constexpr size_t kMaxPendingWaitsPerConnection = 1024;

// The store's default bounds (--store-max-keys, --store-max-bytes).
//
// What torch's init_process_group stores, measured through muster's store
// (the agent store's keys, "/worker/attempt_0/" prefix included; the store's
// keys= and bytes= at exit, MUSTER_LOG_LEVEL=debug, `muster --standalone
// --nproc-per-node N` of a script doing init_process_group("gloo") and two
// barriers, torch 1.13):
//   N = 2: 7 keys, 545 bytes; N = 4: 11 keys, 2,059 bytes; N = 8: 19 keys,
//   8,351 bytes; N = 16: 35 keys, 34,005 bytes. That is 2N + 3 keys and
//   about 119 - 59 N + 136 N^2 bytes:
//   gloo's full mesh has each rank store the addresses of its N pairs.
// NCCL stores no key per rank: one ncclUniqueId (128 bytes) per communicator
// from its rank 0, and the store barrier's one shared counter.
//
// torch 2.6 and 2.14 store N + 1 keys and 8 N (N - 1) + 186 N + 4 bytes
// (docs/benchmarks.md, "Worker store footprint", scripts/bench/
// store_footprint.sh, which measures 1.13 the same as above).
//
// So at 100,000 ranks torch stores 200,003 keys (1.13) or 100,001 (2.x),
// and apart from gloo's address lists 7.4 MiB (1.13) or 17.7 MiB (2.x). The
// key bound is 5x and 10x that; the byte bound about 60x the per-rank part,
// and it holds a gloo full mesh (136 bytes per pair of ranks on 1.13, 8 on
// 2.x: no job runs one at 100,000 ranks) of up to 2,810 ranks on 1.13 and
// 11,574 on 2.x; a larger gloo group needs --store-max-bytes raised.
inline constexpr size_t kDefaultStoreMaxKeys = 1'000'000;
inline constexpr size_t kDefaultStoreMaxBytes = size_t{1} << 30;  // 1 GiB

struct HandlerLimits {
  size_t max_pending_waits = kMaxPendingWaitsPerConnection;
  size_t max_list_keys_reply_bytes = 256u << 20;
  // Keys and queues, all connections together, and the keys pending waiters
  // are registered on (KeyValueStore::WaitedKeys()).
  size_t max_keys = kDefaultStoreMaxKeys;
  // Names and values, all connections together, and the names of the keys
  // pending waiters are registered on.
  size_t max_bytes = kDefaultStoreMaxBytes;
  // The most bytes this request's reply may take: every reply (GET,
  // MULTI_GET, COMPARE_SET, QUEUE_POP, LIST_KEYS) is sized before it is
  // built, and one past it closes the connection instead. Set by the
  // session for each request (store_session.h); `reply_bound` names the
  // bound that set it, for the warning.
  size_t reply_room = SIZE_MAX;
  std::string_view reply_bound = "(unbounded)";
};

struct HandlerOutcome {
  std::string reply;         // bytes to send to the requester now (may be empty)
  bool close = false;        // the connection must be closed
  std::string close_reason;  // when close: why, key=value style
};

// REQUIRES: dialect is the connection's dialect when the request was decoded
// (not kUnknown).
HandlerOutcome HandleRequest(KeyValueStore& store, KeyValueStore::Owner owner, Dialect dialect,
                             Request request, const HandlerLimits& limits = {});

}  // namespace muster::store
