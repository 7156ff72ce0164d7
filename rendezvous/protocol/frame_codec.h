// Framing of the rendezvous wire protocol (rendezvous/PROTOCOL.md, "Transport
// and framing"). A frame is
//
//   uint32 little-endian N (N >= 1) | 1 byte message type | N-1 bytes payload
//
// The payload is a UTF-8 JSON object (message_codec.h); this layer does not
// look inside it.
//
//   FrameDecoder decoder;
//   decoder.Feed(bytes_from_socket);            // a bounded read, e.g. 64 KiB
//   for (;;) {
//     FrameResult r = decoder.Next();
//     if (r.state == FrameResult::kNeedMore) break;        // read more bytes
//     if (r.state == FrameResult::kError) close(r.message);  // sticky
//     handle(r.type, r.payload);
//   }
//
// Bounds: each length prefix is checked as soon as its 4 bytes arrive, before
// any byte after it is buffered, so an oversized or empty frame costs nothing.
// The decoder holds only the bytes fed but not yet returned by Next(), and its
// buffer never exceeds those bytes plus the rest of the frame being received
// (at most 4 + max_frame_bytes), so a caller that drains Next() after every
// bounded read keeps it under max_frame_bytes + 4 + one read. Input may be
// split at any byte boundary; decoding is linear in the bytes fed.
//
// Thread-safety: none; one decoder per connection. Never throws except
// std::bad_alloc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace muster::rdzv {

inline constexpr size_t kFrameLengthBytes = 4;
inline constexpr uint32_t kDefaultMaxFrameBytes = 1u << 20;  // N, type byte included
// The one exception to that bound (PROTOCOL.md, "Transport and framing"): a
// StatusReply, the status document of a large run, may be this large. A
// client that sends StatusRequest must accept it; the daemon answers a
// status that would not fit with an Error instead.
inline constexpr uint32_t kMaxStatusReplyFrameBytes = 8u << 20;
// The bound on the first frame a daemon reads from a connection, which must
// be a Hello (about 200 bytes): a peer that has not yet said who it is may
// make the daemon buffer no more than this.
inline constexpr uint32_t kMaxHelloFrameBytes = 16u << 10;

enum class FrameError {
  kNone,
  kOversized,  // N > max_frame_bytes
  kEmpty,      // N == 0: not even a type byte
};

struct FrameResult {
  enum State { kNeedMore, kFrame, kError };
  State state = kNeedMore;
  uint8_t type = 0;                      // kFrame: the message type byte
  std::string_view payload;              // kFrame: valid until the next Feed() or destruction
  FrameError error = FrameError::kNone;  // kError
  std::string message;                   // kError: one line quoting the bad length
};

class FrameDecoder {
 public:
  // REQUIRES: max_frame_bytes >= 1. `max_first_frame_bytes`: a tighter
  // bound for the stream's first frame (a daemon's kMaxHelloFrameBytes);
  // 0: max_frame_bytes.
  explicit FrameDecoder(uint32_t max_frame_bytes = kDefaultMaxFrameBytes,
                        uint32_t max_first_frame_bytes = 0);

  FrameDecoder(const FrameDecoder&) = delete;
  FrameDecoder& operator=(const FrameDecoder&) = delete;

  // Appends bytes received from the peer, validating each length prefix as it
  // completes. Never fails; an invalid prefix makes the decoder stop taking
  // bytes (the prefix and everything after it are dropped) and Next() report
  // the error once the frames before it have been returned. Invalidates the
  // payload views of earlier results.
  void Feed(std::span<const uint8_t> bytes);
  void Feed(std::string_view bytes);

  // The next complete frame from the bytes fed so far.
  // kNeedMore: no complete frame yet (a partial one is kept).
  // kError: the stream is broken; every later call returns the same error.
  // The caller should close the connection.
  FrameResult Next();

  bool failed() const { return error_ != FrameError::kNone; }
  // Bytes fed but not yet returned by Next().
  size_t buffered_bytes() const { return buffer_.size() - pos_; }
  // Bytes the decoder has allocated for buffering (for the memory contract).
  size_t allocated_bytes() const { return buffer_.capacity(); }

 private:
  void Append(const uint8_t* data, size_t size);
  void Compact();
  void Fail(FrameError error, uint32_t length);

  uint32_t max_frame_bytes_;
  uint32_t max_first_frame_bytes_;
  bool first_judged_ = false;  // the first frame's length prefix was accepted
  std::vector<uint8_t> buffer_;
  size_t pos_ = 0;          // start of the first frame not yet returned
  size_t next_header_ = 0;  // start of the first length prefix not yet validated
  FrameError error_ = FrameError::kNone;
  std::string error_message_;
};

// One whole frame: length prefix, type byte, payload.
// REQUIRES: payload.size() < 2^32 - 1. The peer refuses frames whose N exceeds
// its max_frame_bytes (kDefaultMaxFrameBytes unless configured otherwise).
std::string EncodeFrame(uint8_t type, std::string_view payload);

}  // namespace muster::rdzv
