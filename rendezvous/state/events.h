// What the daemon shell feeds the rendezvous logic (events) and what the
// logic asks the shell to do (actions). A connection is named by an opaque id
// the shell chooses; the logic never sees a socket or a clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "common/clock.h"
#include "rendezvous/protocol/messages.h"
#include "rendezvous/state/status_snapshot.h"

namespace muster::rdzv {

using muster::Time;  // common/clock.h: every `now` the logic is given
using ConnId = uint64_t;

struct MessageEvent {
  ConnId conn = 0;
  Message message;  // a request: Join, Heartbeat, WorkerFailed, WorkersSucceeded, Leave
  // With a Join: the address the connection comes from, as the shell saw it
  // (e.g. "10.0.0.2"); empty when unknown. The master's worker store admits
  // it (AssignmentMessage::member_addrs).
  std::string peer_addr{};
};
struct DisconnectEvent {
  ConnId conn = 0;
};
// Time passed; deadlines are checked. The shell sends one every
// RendezvousServer::kTickInterval (50 ms), well inside the shortest deadline.
struct TickEvent {};
// The shell's loop did not run for longer than a heartbeat interval, so
// heartbeats may be unread: nobody is judged silent for that gap.
struct StallEvent {};

using Event = std::variant<MessageEvent, DisconnectEvent, TickEvent, StallEvent>;

struct SendAction {
  ConnId conn = 0;
  Message message;
};
// Send a frame the logic has already encoded (Encode(message)) and shares
// between many sends, e.g. a run's HeartbeatAck for its current generation:
// the shell writes the bytes as they are. Never null.
struct SendFrameAction {
  ConnId conn = 0;
  std::shared_ptr<const std::string> frame;
};
// Close a connection (a dead node's, so a half-open socket cannot linger).
struct CloseAction {
  ConnId conn = 0;
};
// Answer a StatusRequest on `conn` with what the snapshot holds. The shell
// formats it (the status document) and sends a StatusReply, or an Error when
// the reply would not fit in a frame: both depend on bytes the logic never
// writes.
struct StatusReplyAction {
  ConnId conn = 0;
  StatusSnapshot snapshot;
};
// One line for the daemon's log: "event=node_dead run=r node=n gen=3 ...".
struct LogAction {
  bool warning = false;
  std::string line;
};

using Action = std::variant<SendAction, SendFrameAction, CloseAction, StatusReplyAction, LogAction>;
using Actions = std::vector<Action>;

}  // namespace muster::rdzv
