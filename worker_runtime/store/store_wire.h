// Socket-free encoding of requests and decoding of replies for the torch 1.13
// ("legacy") TCPStore dialect, as StoreClient speaks it.
//
// The wire format itself (query bytes, integer and string layouts, the reply
// constants kCheckReady, kCheckNotReady and kStopWaiting) is defined once, in
// store/tcpstore_protocol.h and tcpstore_codec.h; the request
// encoders here only pick the fields of each operation:
//   SET key value                        no reply
//   COMPARE_SET key expected desired     reply: bytes (the value now stored)
//   GET key                              reply: bytes (torch's client WAITs first)
//   ADD key int64                        reply: int64 (the new value)
//   CHECK n keys...                      reply: one byte, kCheckReady or kCheckNotReady
//   WAIT n keys...                       reply: one byte kStopWaiting once all exist
//   DELETE_KEY key                       reply: int64, the number of keys deleted
// Keys are encoded exactly as given: prefixes are the caller's business.
//
// Thread-safety: pure functions; a ReplyDecoder belongs to one caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "store/tcpstore_protocol.h"

namespace muster::runtime::store_wire {

// A bytes reply announcing more than this is treated as a corrupt stream
// rather than allocated.
inline constexpr uint64_t kMaxReplyBytes = 1ull << 30;

std::string EncodeSet(std::string_view key, std::string_view value);
std::string EncodeCompareSet(std::string_view key, std::string_view expected,
                             std::string_view desired);
std::string EncodeGet(std::string_view key);
std::string EncodeAdd(std::string_view key, int64_t delta);
std::string EncodeCheck(const std::vector<std::string>& keys);
std::string EncodeWait(const std::vector<std::string>& keys);
std::string EncodeDeleteKey(std::string_view key);

enum class ReplyType { kByte, kInt64, kBytes };

// Incremental decoder of one reply of a known type. The caller reads at most
// BytesWanted() bytes from the stream and feeds them, until done() or
// failed(); it therefore never consumes a byte that belongs to a later reply.
class ReplyDecoder {
 public:
  explicit ReplyDecoder(ReplyType type, uint64_t max_bytes = kMaxReplyBytes);

  // Bytes the reply still needs, at least; 0 once done() or failed().
  size_t BytesWanted() const;
  // REQUIRES: bytes.size() <= BytesWanted().
  void Feed(std::string_view bytes);

  bool done() const { return done_; }
  // A bytes reply announced a length above max_bytes; error() says so.
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }

  // REQUIRES: done() and the matching ReplyType.
  uint8_t byte() const;
  int64_t number() const;
  std::string TakeBytes();

 private:
  void Advance();

  ReplyType type_;
  uint64_t max_bytes_;
  std::string buffer_;        // the current field's bytes so far
  bool have_length_ = false;  // kBytes: the length prefix was read
  uint64_t length_ = 0;       // kBytes: the announced length
  bool done_ = false;
  std::string error_;
};

}  // namespace muster::runtime::store_wire
