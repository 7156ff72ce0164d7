// Wire vocabulary of PyTorch's TCPStore protocol, shared by the codec, the
// request handler and the tests.
//
// Two dialects exist and a connection speaks exactly one of them:
//   - kLegacy: torch <= 1.13. Query bytes 0 SET, 1 COMPARE_SET, 2 GET, 3 ADD,
//     4 CHECK, 5 WAIT, 6 GETNUMKEYS, 7 WATCH_KEY, 8 DELETE_KEY. No handshake.
//   - kModern: torch >= 2. Query bytes 0 VALIDATE, 1 SET, 2 COMPARE_SET,
//     3 GET, 4 ADD, 5 CHECK, 6 WAIT, 7 GETNUMKEYS, 8 DELETE_KEY, 9 APPEND,
//     10 MULTI_GET, 11 MULTI_SET, 12 CANCEL_WAIT, 13 PING. The client opens
//     with VALIDATE + uint32 kValidationMagic.
// In both, integers are little-endian, strings and byte vectors are a uint64
// length followed by the bytes, and ADD carries a binary int64.
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
  kUnknown,  // nothing decoded yet on this connection
  kLegacy,   // torch <= 1.13
  kModern,   // torch >= 2
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
  kAppend,      // modern: key, value; no reply
  kMultiGet,    // modern: uint64 n, n keys; reply n byte vectors back to back
  kMultiSet,    // modern: uint64 n, n (key, value) pairs; no reply
  kCancelWait,  // modern: nothing; reply kWaitCanceled
  kPing,        // modern: uint32 nonce; reply the same uint32
};

inline constexpr uint32_t kValidationMagic = 0x3C85F7CE;
inline constexpr uint8_t kCheckReady = 0;
inline constexpr uint8_t kCheckNotReady = 1;
inline constexpr uint8_t kStopWaiting = 0;
inline constexpr uint8_t kWaitCanceled = 1;  // modern only

// One decoded client request. Which fields are meaningful depends on `op`
// (see the Op comments): `keys` holds every key in order, `values` every
// value/expected/desired in order (for kMultiSet values[i] belongs to keys[i]).
struct Request {
  Op op = Op::kGetNumKeys;
  std::vector<std::string> keys;
  std::vector<std::string> values;
  int64_t delta = 0;  // kAdd
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
std::string_view DialectName(Dialect dialect);

}  // namespace muster::store
