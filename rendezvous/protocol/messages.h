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
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "rendezvous/protocol/error_code.h"

namespace muster::rdzv {

// 2: Welcome carries the daemon's timing, which agents adopt (PROTOCOL.md,
// "One timing for the run"). A daemon refuses a Hello of any other version
// (bad_version, fatal), and a version-1 daemon refuses a version-2 Hello the
// same way: a version-1 agent, which fences by its own --rdzv-conf, never
// joins a run beside version-2 agents.
inline constexpr uint32_t kProtocolVersion = 2;
// Where agents find musterd when --rdzv-endpoint gives no port (torchrun's c10d default).
inline constexpr int kDefaultRendezvousPort = 29400;

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
  bool operator==(const Hello&) const = default;
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
  // The highest generation this agent was ever assigned (0: none; absent on
  // the wire then): a daemon that lost the run numbers new generations
  // above it, since an agent ignores a generation it has seen before.
  uint64_t last_generation = 0;
  bool operator==(const Join&) const = default;
};

struct Heartbeat {
  std::string run_id;
  std::string node_id;
  uint64_t generation = 0;  // 0 while waiting for a first assignment
  // The node's training progress in `generation`: the oldest of its local
  // workers' newest reported steps (the slowest worker speaks for the node).
  // 0: no worker reported a step yet (absent on the wire then).
  uint64_t step = 0;
  // Each local worker's own time per step (what it spends not waiting for
  // the others), in microseconds, by local rank; 0 where not known. Sent
  // about once a second while workers report it, absent otherwise (the
  // other heartbeats keep the fast path: heartbeat_fast_path.h). At most
  // kMaxComputeRanks entries.
  std::vector<uint64_t> compute_us;
  bool operator==(const Heartbeat&) const = default;
};

inline constexpr size_t kMaxComputeRanks = 1024;

// A Heartbeat whose strings live elsewhere (in a received frame, or in a
// Heartbeat): what the daemon's hot path handles without copying.
struct HeartbeatView {
  std::string_view run_id;
  std::string_view node_id;
  uint64_t generation = 0;
  uint64_t step = 0;                     // Heartbeat::step
  std::span<const uint64_t> compute_us;  // Heartbeat::compute_us; empty on the fast path
  HeartbeatView(std::string_view run, std::string_view node, uint64_t gen, uint64_t step_ = 0)
      : run_id(run), node_id(node), generation(gen), step(step_) {}
  explicit HeartbeatView(const Heartbeat& hb)
      : run_id(hb.run_id),
        node_id(hb.node_id),
        generation(hb.generation),
        step(hb.step),
        compute_us(hb.compute_us) {}
};

// A local worker failed: the job restarts (a new generation for every node),
// counted once against max_restarts for the whole job.
struct WorkerFailed {
  std::string run_id;
  std::string node_id;
  uint64_t generation = 0;
  int exit_code = 0;
  std::string message;  // short description for logs and status
  bool operator==(const WorkerFailed&) const = default;
};

// Every local worker of this generation exited 0.
struct WorkersSucceeded {
  std::string run_id;
  std::string node_id;
  uint64_t generation = 0;
  bool operator==(const WorkersSucceeded&) const = default;
};

// The agent leaves for good (e.g. it was interrupted).
struct Leave {
  std::string run_id;
  std::string node_id;
  bool operator==(const Leave&) const = default;
};

struct StatusRequest {
  std::string run_id;  // empty: every run
  bool operator==(const StatusRequest&) const = default;
};

// --- daemon -> agent -------------------------------------------------------

// The timing a daemon acts on, in milliseconds (Settings of
// rendezvous/state/settings.h): every agent it welcomes heartbeats and
// fences by it, whatever its own --rdzv-conf says (client/timing_agreement.h).
struct DaemonTiming {
  uint64_t keep_alive_interval_ms = 0;  // how often agents heartbeat
  uint64_t heartbeat_timeout_ms = 0;    // silence after which it gives a node's place away
  uint64_t fence_timeout_ms = 0;        // silence after which an agent stops its workers
  uint64_t failover_timeout_ms = 0;     // the same, while replicas answer (replicated only)
  bool operator==(const DaemonTiming&) const = default;
};

struct Welcome {
  uint32_t protocol_version = kProtocolVersion;
  std::string daemon_id;  // changes when the daemon restarts
  // A replica that leads: its epoch (PROTOCOL.md, "Replicas"). 0: not
  // replicated. Absent on the wire when 0.
  uint64_t epoch = 0;
  // Required on the wire (protocol version 2).
  DaemonTiming timing{};
  bool operator==(const Welcome&) const = default;
};

// The request was refused; the daemon closes the connection after sending it
// when `fatal`. On the wire `code` is its string (error_code.h).
struct Error {
  ErrorCode code = ErrorCode::kUnknown;
  std::string message;  // one line, quoting the bad value
  bool fatal = false;
  // The code as it arrived when this version does not know it (code ==
  // kUnknown), so logs show it and encoding writes it back; empty otherwise.
  // (Its `{}` lets Error{code, message, fatal} leave it out.)
  std::string unknown_code{};
  // not_leader: the leader's HOST:PORT and epoch, for the agent to follow
  // and fence on; empty and 0 otherwise (and absent on the wire).
  std::string leader{};
  uint64_t epoch = 0;
  // not_leader, no_leader: the standby read its view of the leader from etcd
  // within kStandbyViewCurrentFor (rendezvous/state/takeover_hold.h), so the
  // answer predates any leader elected since by less than that. Absent (false)
  // from a standby that cannot say.
  bool current = false;
  // The code as the wire spells it.
  std::string_view code_name() const { return WireCodeName(code, unknown_code); }
  bool operator==(const Error&) const = default;
};

// Joined; waiting for the round to close (or for the next round).
struct Waiting {
  std::string run_id;
  std::string reason;
  bool operator==(const Waiting&) const = default;
};

// A round closed: this node's place in the new generation.
struct AssignmentMessage {
  Assignment assignment;
  // The epoch of the replica that sent it (0: not replicated; absent on the
  // wire when 0). An agent refuses one older than an epoch it has seen.
  uint64_t epoch = 0;
  // The master's message only (group rank 0): the addresses of this
  // generation's member nodes, for its worker store's admission rule: each
  // member's connection address as the rendezvous saw it, and its
  // Join.store_addr when that is an IP literal. Sorted, without repeats.
  // Empty for every other node, and when the list would not fit in a frame
  // (absent on the wire when empty).
  std::vector<std::string> member_addrs{};
  bool operator==(const AssignmentMessage&) const = default;
};

struct HeartbeatAck {
  std::string run_id;
  uint64_t generation = 0;
  bool operator==(const HeartbeatAck&) const = default;
};

// The run is over: `succeeded` or failed with a message (e.g. "3 nodes left,
// below --nnodes MIN 4 for join_timeout 600 s").
struct RunEnded {
  std::string run_id;
  bool succeeded = false;
  std::string message;
  bool operator==(const RunEnded&) const = default;
};

struct StatusReply {
  std::string json;  // the status document (see PROTOCOL.md)
  bool operator==(const StatusReply&) const = default;
};

using Message =
    std::variant<Hello, Join, Heartbeat, WorkerFailed, WorkersSucceeded, Leave, StatusRequest,
                 Welcome, Error, Waiting, AssignmentMessage, HeartbeatAck, RunEnded, StatusReply>;

}  // namespace muster::rdzv
