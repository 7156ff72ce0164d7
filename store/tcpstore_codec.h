// Bounded, incremental, socket-free codec for the TCPStore wire protocol
// (dialects and layouts in tcpstore_protocol.h).
//
//   RequestDecoder decoder;
//   decoder.Feed(bytes_from_socket);
//   for (;;) {
//     DecodeResult r = decoder.Next();
//     if (r.state == DecodeResult::kNeedMore) break;       // read more bytes
//     if (r.state == DecodeResult::kError) close(r.error);  // sticky
//     handle(r.request);
//   }
//
// The dialect is detected from the first request of a connection: a modern
// client always opens with 0x00 followed by the uint32 magic; the same bytes
// as a legacy SET would announce a key over 1 GB, which is never accepted.
// Without the handshake the connection is torch 1.13 or 2.1, told apart
// request by request as dialect_rule.h says; the facts that rule needs beyond
// the bytes (an unanswered WAIT, a client gone quiet) come with each Next().
//
// Bounds: every announced length and count is checked against DecoderLimits
// as soon as its prefix arrives, before any byte of the body is buffered or
// allocated; a request's total size is bounded too. Decoding is linear in
// the bytes fed (a partial request is resumed, not re-parsed).
//
// Thread-safety: none; one decoder per connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "store/tcpstore_protocol.h"

namespace muster::store {

struct DecoderLimits {
  uint64_t max_string_bytes = 64ull << 20;    // any one key or value
  uint64_t max_keys = 1ull << 16;             // n in CHECK/WAIT/MULTI_GET/MULTI_SET
  uint64_t max_request_bytes = 128ull << 20;  // one whole request, prefixes included
};

// What the caller knows about the connection beyond its bytes. Only an
// undecided connection (dialect_rule.h) looks at them.
struct StreamFacts {
  bool wait_pending = false;  // a WAIT of this connection is not answered yet
  // Every byte the client sends before it waits for a reply has been fed:
  // true for a caller that feeds whole requests (tests); a socket reader
  // passes false until the client stayed quiet for a settle delay.
  bool quiet = true;
};

struct DecodeResult {
  enum State { kNeedMore, kRequest, kError };
  State state = kNeedMore;
  Request request;    // when kRequest
  std::string error;  // when kError: what was wrong, key=value style
};

class RequestDecoder {
 public:
  explicit RequestDecoder(DecoderLimits limits = {});

  // Appends bytes received from the client. Never fails; limits are enforced
  // by Next(). After an error further bytes are ignored.
  void Feed(std::span<const uint8_t> bytes);
  void Feed(std::string_view bytes);

  // Decodes the next complete request from the bytes fed so far.
  // kNeedMore: no complete request yet (the partial one is kept).
  // kError: the stream is not a valid request sequence, or a query byte is
  // ambiguous or unknown (dialect_rule.h); every later call returns the same
  // error. The caller should close the connection.
  DecodeResult Next(const StreamFacts& facts = {});

  // kUnknown until the first request's dialect has been recognized; kLegacy
  // for a connection without handshake until it proves to be torch 2.1.
  Dialect dialect() const { return dialect_; }
  // Whether dialect() is final: always for kModern and kTorch21; for kLegacy
  // once the connection proved to be torch 1.13.
  bool dialect_settled() const { return settled_; }
  // dialect() for logs, "undecided (torch 1.13 or 2.1)" while not settled.
  std::string_view dialect_label() const;
  // The last Next() returned kNeedMore only because an undecided query 8 has
  // its key and nothing after it: Next() with facts.quiet decides it.
  bool awaiting_quiet() const { return awaiting_quiet_; }
  // Bytes fed but not yet decoded. The fields of a partial request already
  // read are not counted; 0 once every request fed has been returned.
  size_t buffered_bytes() const { return buffer_.size() - pos_; }
  // The memory this decoder holds for its client: the buffer's capacity
  // (which has room for a body whose length is announced) and the fields of
  // the partial request read so far. What the store's buffer bound counts
  // (store_session.h). A large buffer is released once its bytes are
  // decoded, so an idle connection holds next to nothing.
  size_t held_bytes() const {
    const uint64_t fields =
        in_request_ ? request_bytes_ - (have_pending_len_ ? pending_len_ : 0) : 0;
    return buffer_.capacity() + fields;
  }

 private:
  enum class Field { kDone, kU32, kI64, kCount, kKey, kValue };

  Field NextField() const;
  bool DetectDialect();  // false: need more bytes
  // Starts the request whose query byte is at pos_; false: failed.
  bool BeginRequest(uint8_t wire, const StreamFacts& facts);
  // Decides an undecided query 8 once its key is read; false: not yet, or
  // failed (error_ set).
  bool SettleQuery8(const StreamFacts& facts);
  DecodeResult Fail(std::string message);
  void Compact();

  DecoderLimits limits_;
  Dialect dialect_ = Dialect::kUnknown;
  bool settled_ = false;           // see dialect_settled()
  bool query8_undecided_ = false;  // the request is a query 8 awaiting ClassifyQuery8
  bool awaiting_quiet_ = false;
  std::string buffer_;
  size_t pos_ = 0;  // first unconsumed byte of buffer_

  // The request being decoded; resumed field by field across Feed calls.
  bool in_request_ = false;
  Request request_;
  size_t fields_done_ = 0;
  uint64_t count_ = 0;             // n of a list request, once read
  bool have_pending_len_ = false;  // a string's length prefix was read...
  uint64_t pending_len_ = 0;       // ...and its body is awaited
  uint64_t request_bytes_ = 0;     // bytes of this request consumed or announced

  std::string error_;  // non-empty once failed
};

// Value encoders: each appends one wire value to *out. Layouts are the same
// in every dialect. The store encodes its replies with them and the worker
// runtime's client (worker_runtime/store) its requests, so both sides share
// one definition of the byte layout.
void EncodeBytes(std::string_view value, std::string* out);  // uint64 length + bytes
void EncodeInt64(int64_t value, std::string* out);    // ADD, GETNUMKEYS, DELETE_KEY, QUEUE_*, ...
void EncodeUint64(uint64_t value, std::string* out);  // key counts (CHECK, WAIT, ...)
void EncodeUint32(uint32_t value, std::string* out);  // PING
void EncodeByte(uint8_t value, std::string* out);     // CHECK, WAIT, CANCEL_WAIT

// Value decoders, the inverse of the encoders for fixed-size integers: the
// value in the first 8 bytes of `bytes`. REQUIRES: bytes.size() >= 8.
uint64_t DecodeUint64(std::string_view bytes);
int64_t DecodeInt64(std::string_view bytes);

}  // namespace muster::store
