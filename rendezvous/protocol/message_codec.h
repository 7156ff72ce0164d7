// Message <-> frame: the JSON form of every rendezvous message
// (rendezvous/PROTOCOL.md is the specification, messages.h the structs).
//
//   decoder.Feed(bytes);                                  // frame_codec.h
//   FrameResult f = decoder.Next();
//   Result<Message> m = Decode(f.type, f.payload);
//   if (!m.ok()) reply Error{ErrorCode::kBadFrame, m.status().message(), true}, close
//   ...
//   send(Encode(Welcome{...}));                          // one whole frame
//
// Encoding: one JSON object per message; field names are the C++ field names
// (snake_case); an Assignment is a nested object; an empty std::optional is
// left out. Strings that are not valid UTF-8 are sent with U+FFFD in place of
// the bad bytes.
//
// Decoding is strict: the payload must be one JSON object nested at most
// kMaxJsonDepth deep; every field except the std::optional ones must be
// present with its JSON type (integers must be JSON integers within the C++
// type's range); counts, ranks and generations must be >= 0 (exit_code may be
// negative), ports in [0, 65535]; strings at most kMaxShortStringBytes except
// Error.message and StatusReply.json, which only the frame bounds. An optional
// field may also be null. Unknown fields are ignored (forward compatibility),
// and so is an Error.code this version does not know: it decodes as
// ErrorCode::kUnknown with the string kept in Error.unknown_code.
// Every refusal is a Status::InvalidArgument naming the field and quoting the
// bad value (truncated), e.g.
//   Join.local_world_size: expected an integer in [0, 2147483647], got -3
//
// Thread-safety: pure functions. Never throws except std::bad_alloc (Encode).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "rendezvous/protocol/messages.h"

namespace muster::rdzv {

// The type byte of each message. Stable: a number is never reused for another
// message. Agent -> daemon messages have the high bit clear, daemon -> agent
// messages have it set; 0x00 is never a message.
enum class MessageType : uint8_t {
  kHello = 0x01,
  kJoin = 0x02,
  kHeartbeat = 0x03,
  kWorkerFailed = 0x04,
  kWorkersSucceeded = 0x05,
  kLeave = 0x06,
  kStatusRequest = 0x07,
  kWelcome = 0x81,
  kError = 0x82,
  kWaiting = 0x83,
  kAssignment = 0x84,  // AssignmentMessage
  kHeartbeatAck = 0x85,
  kRunEnded = 0x86,
  kStatusReply = 0x87,
};

inline constexpr size_t kMaxShortStringBytes = 4096;
inline constexpr int kMaxJsonDepth = 16;  // the payload object itself is depth 1

MessageType TypeOf(const Message& message);

// "Hello", "Join", ... "Assignment" (for AssignmentMessage): for logs and
// error messages. Points at static storage.
std::string_view MessageName(const Message& message);

// A whole frame (length prefix, type byte, JSON payload).
std::string Encode(const Message& message);

// The message in one frame's type byte and payload; InvalidArgument for an
// unknown type byte or a payload that breaks the rules above.
Result<Message> Decode(uint8_t type, std::string_view payload);

}  // namespace muster::rdzv
