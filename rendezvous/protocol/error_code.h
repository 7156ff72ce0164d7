// ErrorCode: why the daemon refused a request, as the code of an Error
// message (PROTOCOL.md, "Error.code"). On the wire a code is a string; this
// is its C++ form, and error_code.cc holds the one table between the two.
//
//   Error{ErrorCode::kStaleGeneration, "generation 2 is not current (3)", false}
//   if (error.code == ErrorCode::kUnknownNode) join again;
//
// A peer of a later version may send a code this one does not know: it reads
// as kUnknown, and the Error keeps the string it came with (messages.h,
// Error::unknown_code) for logs and for encoding it again unchanged.
//
// Thread-safety: pure functions over constant data.
#pragma once

#include <string_view>

namespace muster::rdzv {

enum class ErrorCode {
  kUnknown,          // a code this version does not know; never sent by it
  kBadVersion,       // Hello's protocol_version is not one the daemon speaks (fatal)
  kBadToken,         // Hello's token is wrong or missing (fatal)
  kBadFrame,         // a frame or payload the receiver cannot decode (fatal)
  kBadRequest,       // a message the daemon does not accept here, or cannot answer
  kStaleGeneration,  // an outcome report about a generation that is not current
  kUnknownNode,      // the run does not count this node in: join again
  kUnknownRun,       // the daemon does not know this run: join again
  kNotLeader,        // a standby replica: the message names the leader and its epoch
  kNoLeader,         // a standby replica, and no leader is elected yet (or known)
};

// The wire string of `code`: "bad_version", "stale_generation", ...;
// "unknown" for kUnknown (a name for logs; a kUnknown Error is encoded with
// the string it arrived with). Points at static storage.
std::string_view ErrorCodeName(ErrorCode code);

// The code as the wire spells it: ErrorCodeName(code), or for kUnknown the
// string it arrived with (`unknown_code`), which is sent back unchanged.
inline std::string_view WireCodeName(ErrorCode code, std::string_view unknown_code) {
  return code == ErrorCode::kUnknown ? unknown_code : ErrorCodeName(code);
}

// The code whose wire string is `name`; kUnknown for any other string
// (including "unknown" and ""). Exact, case-sensitive match.
ErrorCode ParseErrorCode(std::string_view name);

}  // namespace muster::rdzv
