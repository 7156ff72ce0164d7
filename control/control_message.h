// The agent<->worker control channel's messages and their one-line text
// form (control/PROTOCOL.md, version 1). Both directions are here so the
// agent and the worker runtime share one definition of the language.
//
// Contract: Format*() of any message the parser accepts parses back to an
// equal message. Parse*() takes one line without its '\n' and, on success,
// sets `out` to its message; otherwise it returns InvalidArgument naming the
// line and what is wrong with it (quoted: the error stays one printable line
// whatever the bytes were) and leaves `out` unspecified. (An out-parameter
// rather than Result<variant>: g++ 12 with sanitizers reports a false
// -Wmaybe-uninitialized when a variant is moved into a Result.)
// Progress and fault reports ("42", "inject 3") are not control messages:
// ParseWorkerMessage refuses them, and callers try launcher's
// ParseProgressReport for those lines.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"

namespace muster::control {

// The highest version this build speaks, and the longest line either side
// may write (the '\n' included).
inline constexpr int kProtocolVersion = 1;
inline constexpr size_t kMaxLineBytes = 4096;
// The capability a worker names in Hello when it can pause and join a new
// generation without exiting.
inline constexpr std::string_view kInPlaceCapability = "in-place";

// --- worker -> agent --------------------------------------------------------

struct Hello {
  int version = kProtocolVersion;
  std::vector<std::string> capabilities;
  bool operator==(const Hello&) const = default;
};
// Paused: left `generation`, communicator aborted, step in flight dropped.
struct Ready {
  uint64_t generation = 0;
  bool operator==(const Ready&) const = default;
};
// Joined `generation`: stepping again.
struct Joined {
  uint64_t generation = 0;
  bool operator==(const Joined&) const = default;
};
// Could not pause or join for `generation`; `reason` is free text.
struct Failed {
  uint64_t generation = 0;
  std::string reason;
  bool operator==(const Failed&) const = default;
};
using WorkerMessage = std::variant<Hello, Ready, Joined, Failed>;

// --- agent -> worker --------------------------------------------------------

// Leave `generation`: abort the communicator, drop the step in flight.
struct Pause {
  uint64_t generation = 0;
  bool operator==(const Pause&) const = default;
};
// Join `generation` as these values (torchrun's worker variables) with the
// store keys under `store_prefix`.
struct Join {
  uint64_t generation = 0;
  int rank = 0;
  int world_size = 1;
  int group_rank = 0;
  int local_rank = 0;
  std::string master_addr;
  int master_port = 0;
  std::string store_prefix;
  bool operator==(const Join&) const = default;
};
// Exit now.
struct Stop {
  bool operator==(const Stop&) const = default;
};
using AgentMessage = std::variant<Pause, Join, Stop>;

// One line each, without the '\n'. REQUIRES: the message's text fields are
// printable ASCII without spaces (Failed::reason: printable ASCII), as the
// parser would accept them; Join's numbers in the ranges PROTOCOL.md gives.
std::string FormatWorkerMessage(const WorkerMessage& message);
std::string FormatAgentMessage(const AgentMessage& message);

Status ParseWorkerMessage(std::string_view line, WorkerMessage& out);
Status ParseAgentMessage(std::string_view line, AgentMessage& out);

// True when a worker that said `hello` may be recovered in place: it speaks
// a version this build knows and names the in-place capability.
bool CanRecoverInPlace(const Hello& hello);

}  // namespace muster::control
