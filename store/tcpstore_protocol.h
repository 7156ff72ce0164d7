// Wire vocabulary of PyTorch's TCPStore protocol, shared by the codec, the
// request handler and the tests.
//
// Three numberings of the query byte exist; a connection speaks exactly one:
//   - kLegacy: torch 1.13. No handshake. 0 SET, 1 COMPARE_SET,
//     2 GET, 3 ADD, 4 CHECK, 5 WAIT, 6 GETNUMKEYS, 7 WATCH_KEY, 8 DELETE_KEY.
//   - kTorch21: torch 2.1. No handshake. 0..6 as in kLegacy, then
//     7 DELETE_KEY, 8 APPEND, 9 MULTI_GET, 10 MULTI_SET, 11 CANCEL_WAIT.
//   - kModern: torch >= 2.2. The client opens with VALIDATE + uint32
//     kValidationMagic. 0 VALIDATE, 1 SET, 2 COMPARE_SET, 3 GET, 4 ADD,
//     5 CHECK, 6 WAIT, 7 GETNUMKEYS, 8 DELETE_KEY, 9 APPEND, 10 MULTI_GET,
//     11 MULTI_SET, 12 CANCEL_WAIT, 13 PING (2.6 has these), 14 QUEUE_PUSH,
//     15 QUEUE_POP, 16 QUEUE_LEN, 17 LIST_KEYS, 18 BARRIER (2.14 has these;
//     its queue calls need libuv).
// A connection without a handshake is read as kLegacy until it proves to be
// torch 2.1: dialect_rule.h says how, and when a query byte is ambiguous.
// In all three, integers are little-endian, strings and byte vectors are a
// uint64 length followed by the bytes, and ADD carries a binary int64 (the
// store keeps the sum as decimal ASCII). Per-version byte tables with torch
// source citations: tests/unit/store_torch_wire_tables.txt.
//
// Thread-safety: constants and pure functions only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace muster::store {

enum class Dialect {
  kUnknown,  // nothing decoded yet
  kLegacy,   // no handshake, torch 1.13 numbering (or 2.1 not yet told apart from it)
  kTorch21,  // no handshake, torch 2.1 numbering
  kModern,   // VALIDATE handshake, torch >= 2.2
};

// An operation, independent of the byte that names it in a dialect.
enum class Op : uint8_t {
  kValidate,    // modern: uint32 magic; no reply
  kSet,         // key, value; no reply
  kCompareSet,  // key, expected, desired; reply bytes
  kGet,         // key; reply bytes
  kAdd,         // key, int64 delta; reply int64
  kCheck,       // uint64 n, n keys; reply one byte (kCheckReady / kCheckNotReady)
  kWait,        // uint64 n, n keys; reply kStopWaiting once all exist
  kGetNumKeys,  // nothing; reply int64
  kWatchKey,    // legacy: key; decoded but not supported by the server
  kDeleteKey,   // key; reply int64 number deleted (0 or 1)
  kAppend,      // 2.1/modern: key, value; no reply
  kMultiGet,    // 2.1/modern: uint64 n, n keys; reply n byte vectors back to back
  kMultiSet,    // 2.1/modern: uint64 n, n (key, value) pairs; no reply
  kCancelWait,  // 2.1/modern: nothing; reply kWaitCanceled
  kPing,        // modern: uint32 nonce; reply the same uint32
  kQueuePush,   // modern: key, value; no reply
  kQueuePop,    // modern: key; reply int64 length before the pop, then (if > 0) bytes
  kQueueLen,    // modern: key; reply int64
  kListKeys,    // modern: nothing; reply int64 n, then n keys as byte vectors
  kBarrier,     // modern: key, int64 world size; reply kStopWaiting once it is reached
};

inline constexpr uint32_t kValidationMagic = 0x3C85F7CE;
inline constexpr uint8_t kCheckReady = 0;
inline constexpr uint8_t kCheckNotReady = 1;
inline constexpr uint8_t kStopWaiting = 0;
inline constexpr uint8_t kWaitCanceled = 1;  // 2.1 and modern

// One decoded client request. Which fields are meaningful depends on `op`
// (see the Op comments): `keys` holds every key in order, `values` every
// value/expected/desired in order (for kMultiSet values[i] belongs to keys[i]).
struct Request {
  Op op = Op::kGetNumKeys;
  std::vector<std::string> keys;
  std::vector<std::string> values;
  int64_t delta = 0;  // kAdd: the delta; kBarrier: the world size
  uint32_t word = 0;  // kValidate: the magic; kPing: the nonce

  bool operator==(const Request&) const = default;
};

// The operation named by query byte `wire` in `dialect`, or nullopt when the
// dialect has no such query type. REQUIRES: dialect != kUnknown.
std::optional<Op> OpFromWire(Dialect dialect, uint8_t wire);
// The query byte that names `op` in `dialect`: the inverse of OpFromWire.
// nullopt when the dialect has no such operation (kWatchKey in kModern,
// kAppend in kLegacy, ...). REQUIRES: dialect != kUnknown.
std::optional<uint8_t> OpToWire(Dialect dialect, Op op);

// "SET", "COMPARE_SET", ... for logs and test names.
std::string_view OpName(Op op);
// "legacy", "torch-2.1", "modern".
std::string_view DialectName(Dialect dialect);

}  // namespace muster::store
