// The dialect rule for connections that open without a handshake. Torch 1.13
// and torch 2.1 both do (tcpstore_protocol.h), and their query bytes agree on
// 0..6 only. Until something tells them apart the connection is "undecided"
// (decoded as kLegacy), and each query byte is judged as follows:
//
//   0..6     the same request in both: SET, COMPARE_SET, GET, ADD, CHECK,
//            WAIT, GETNUMKEYS, with the same layouts and replies (ADD's delta
//            is a binary int64 in both; only the stored sum is decimal ASCII).
//            Decoded; the connection stays undecided.
//   0..8, while a WAIT of this connection is unanswered:
//            torch 1.13. A 2.1 client blocks on its WAIT and, on timeout, sends
//            CANCEL_WAIT (11) and nothing else (2.1 TCPStore.cpp:398-438); 1.13
//            has no CANCEL_WAIT and simply sends its next request (9 or 10
//            then fits neither client: closed).
//   9, 10, 11  torch 2.1: MULTI_GET, MULTI_SET, CANCEL_WAIT. 1.13 has no such
//            query (its server rejects them, 1.13 TCPStore.cpp:271-304).
//   7        ambiguous: 1.13 WATCH_KEY or 2.1 DELETE_KEY, both a key followed
//            by a wait for the reply. The connection is closed.
//   8        1.13 DELETE_KEY (a key, then the client waits for an int64) or 2.1
//            APPEND (a key and a value, no reply). What follows the key
//            decides (ClassifyQuery8): 2.1 writes the whole APPEND with one
//            send() (SendBuffer, 2.1 TCPStore.cpp:167-212, 440-448), 1.13 writes
//            nothing after DELETE_KEY until it has the reply (1.13
//            TCPStore.cpp:1086-1091). A byte after the key: 2.1 APPEND.
//            Nothing, after the client stayed quiet for the session's settle
//            delay: 1.13 DELETE_KEY, if the key is at most kQuietKeyLimit
//            bytes, so that APPEND's key and value length would have shared
//            one minimal TCP segment; a longer key is ambiguous and closed.
//   12..255  no such query in either: closed.
//
// Once decided the connection keeps its dialect, and a byte that dialect does
// not have closes it. Every close names the byte and the dialect(s), e.g.
// "query byte 7 is ambiguous before the dialect is known (torch 1.13
// WATCH_KEY or 2.1 DELETE_KEY)". Where the bytes cannot decide, the
// connection is closed rather than read under a guess. The one decision that
// rests on timing, silence after query 8's key, could only be wrong for a 2.1
// APPEND whose one send() the network split right after a key of at most
// kQuietKeyLimit bytes and then held back for the whole settle delay.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "store/tcpstore_protocol.h"

namespace muster::store {

// Query bytes below this mean the same request in torch 1.13 and 2.1.
inline constexpr uint8_t kSharedQueryBytes = 7;

// A key longer than this, of a query 8 whose client went quiet, is too long
// to prove DELETE_KEY: 1 + 8 + key + 8 bytes must fit a 536-byte segment.
inline constexpr uint64_t kQuietKeyLimit = 512;

enum class Verdict {
  kShared,        // decode in kLegacy; the connection stays undecided
  kTorch113,      // decode in kLegacy; the connection is torch 1.13 from now on
  kTorch21,       // decode in kTorch21; the connection is torch 2.1 from now on
  kReadKeyFirst,  // query 8: read its key, then ClassifyQuery8
  kClose,         // ambiguous or unknown: close with `reason`
};

struct QueryVerdict {
  Verdict verdict = Verdict::kClose;
  std::string reason;  // kClose only
};

// The first byte of a request on an undecided connection. `wait_pending`:
// the connection has a WAIT that has not been answered.
QueryVerdict ClassifyUndecidedQuery(uint8_t query, bool wait_pending);

enum class Query8Verdict {
  kAppend,     // torch 2.1 APPEND: read the value next
  kDeleteKey,  // torch 1.13 DELETE_KEY: the request is complete
  kWait,       // nothing follows yet and the client was not quiet long enough
  kClose,      // ambiguous: Query8AmbiguousReason()
};

struct Query8Facts {
  uint64_t key_bytes = 0;     // the key's length
  bool bytes_follow = false;  // at least one byte after the key has arrived
  bool quiet = false;         // nothing more arrived during the settle delay
};

// Query 8 on an undecided connection, once its key has been read.
Query8Verdict ClassifyQuery8(const Query8Facts& facts);

// "query byte 8 is ambiguous before the dialect is known (torch 1.13
// DELETE_KEY or 2.1 APPEND)", for ClassifyQuery8's kClose.
std::string Query8AmbiguousReason(uint64_t key_bytes);

// "unknown query type query=19 dialect=modern", for a decided connection.
std::string UnknownQueryReason(uint8_t query, Dialect dialect);

}  // namespace muster::store
