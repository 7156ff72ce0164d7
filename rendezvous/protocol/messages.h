// The rendezvous wire messages between agents (`muster`) and the daemon
// (`musterd`). rendezvous/PROTOCOL.md is the prose specification; this header
// is its C++ form. Every message that concerns a run carries the run id, and
// every message about a generation carries the generation number, so stale
// messages can be refused (fencing).
//
// Values only: no sockets, no clocks.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace muster::rdzv {

inline constexpr uint32_t kProtocolVersion = 1;

// One node's place in one generation (what the agent must remember to let a
// restarted daemon rebuild the run).
struct Assignment {
  std::string run_id;
  uint64_t generation = 0;
  int group_rank = 0;
  int group_world_size = 0;
  int local_world_size = 0;
  int global_rank_offset = 0;
  int world_size = 0;
  std::string master_addr;
  int master_port = 0;
  int restart_count = 0;  // job-wide restarts used so far
  int max_restarts = 0;
  bool operator==(const Assignment&) const = default;
};

// --- agent -> daemon -------------------------------------------------------

// First message on every connection. The daemon answers Welcome or Error.
struct Hello {
  uint32_t protocol_version = kProtocolVersion;
  std::string token;     // shared secret from --token-file; empty when none
  std::string agent_id;  // unique per agent process: "<host>:<pid>:<random>"
};

// Join (or re-join) a run.
struct Join {
  std::string run_id;
  std::string node_id;  // stable for the agent's life
  std::string host;     // for status and logs
  int local_world_size = 1;
  int min_nodes = 1;
  int max_nodes = 1;
  int max_restarts = 0;
  std::string store_addr;  // where this agent's worker store listens (used if it becomes master)
  int store_port = 0;
  // The assignment this agent's workers run under right now, if any: lets a
  // restarted daemon rebuild the run without restarting workers.
  std::optional<Assignment> current;
};

struct Heartbeat {
  std::string run_id;
  std::string node_id;
  uint64_t generation = 0;  // 0 while waiting for a first assignment
};

// A local worker failed: the job restarts (a new generation for every node),
// counted once against max_restarts for the whole job.
struct WorkerFailed {
  std::string run_id;
  std::string node_id;
  uint64_t generation = 0;
  int exit_code = 0;
  std::string message;  // short description for logs and status
};

// Every local worker of this generation exited 0.
struct WorkersSucceeded {
  std::string run_id;
  std::string node_id;
  uint64_t generation = 0;
};

// The agent leaves for good (e.g. it was interrupted).
struct Leave {
  std::string run_id;
  std::string node_id;
};

struct StatusRequest {
  std::string run_id;  // empty: every run
};

// --- daemon -> agent -------------------------------------------------------

struct Welcome {
  uint32_t protocol_version = kProtocolVersion;
  std::string daemon_id;  // changes when the daemon restarts
};

// The request was refused; the daemon closes the connection after sending it
// when `fatal`.
struct Error {
  std::string
      code;  // "bad_token", "bad_version", "bad_frame", "stale_generation", "bad_request", ...
  std::string message;  // one line, quoting the bad value
  bool fatal = false;
};

// Joined; waiting for the round to close (or for the next round).
struct Waiting {
  std::string run_id;
  std::string reason;
};

// A round closed: this node's place in the new generation.
struct AssignmentMessage {
  Assignment assignment;
};

struct HeartbeatAck {
  std::string run_id;
  uint64_t generation = 0;
};

// The run is over: `succeeded` or failed with a message (e.g. "3 nodes left,
// below --nnodes MIN 4 for join_timeout 600 s").
struct RunEnded {
  std::string run_id;
  bool succeeded = false;
  std::string message;
};

struct StatusReply {
  std::string json;  // the status document (see PROTOCOL.md)
};

using Message =
    std::variant<Hello, Join, Heartbeat, WorkerFailed, WorkersSucceeded, Leave, StatusRequest,
                 Welcome, Error, Waiting, AssignmentMessage, HeartbeatAck, RunEnded, StatusReply>;

}  // namespace muster::rdzv
