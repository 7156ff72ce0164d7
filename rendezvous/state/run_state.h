// RunState: the rendezvous of one run (one job), as a pure state machine.
// Each On<Event>(..., now) changes the state and returns (or appends to
// `out`) the actions to carry out, messages to send among them; nothing
// here reads a clock, touches a socket or starts a thread.
//
// Phases (transitions):
//   kGathering  --MIN nodes joined------------------------------> kLastCall
//   kGathering  --join_timeout without MIN nodes----------------> kEnded (failed)
//   kLastCall   --MAX nodes joined, or last_call_timeout--------> kRunning (new generation)
//   kRunning    --member dead, >= MIN remain--------------------> kRunning (new generation)
//   kRunning    --member dead, < MIN remain---------------------> kGathering (survivors wait)
//   kRunning    --worker failed, restarts left------------------> kRunning (new generation)
//   kRunning    --worker failed, no restarts left---------------> kEnded (failed)
//   kRunning    --newcomer, after last_call_timeout-------------> kRunning (new generation)
//   kRunning    --every member's workers succeeded--------------> kEnded (succeeded)
//
// Draining: a running generation that must end (a member died or failed, a
// newcomer is admitted) ends in two steps. Members that may still run its
// workers get Waiting and stop them; each says so by a heartbeat for another
// generation (or by dying, leaving, or reporting an outcome). Only when none
// is left, or after kDrainTimeout, does the next generation start: the
// workers of two generations never run at once, on any node.
//   kRebuilding --all members of the reported generation back---> kRunning (same generation)
//   kRebuilding --close_timeout---------------------------------> kRunning (new gen) | kGathering
//
// Group ranks of a new generation: members of the previous generation keep
// their relative order, newcomers follow in join order; group rank 0 is the
// master and its agent's store is MASTER_ADDR:MASTER_PORT. Generations only
// grow; messages about older generations are refused as stale.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "rendezvous/state/events.h"
#include "rendezvous/state/settings.h"

namespace muster::rdzv {

class RunState {
 public:
  enum class Phase { kGathering, kLastCall, kRunning, kRebuilding, kEnded };

  RunState(std::string run_id, const Join& first, const Settings& settings, Time now);

  // Requests from a node of this run. REQUIRES: the message's run_id is this run's.
  Actions OnJoin(ConnId conn, const Join& join, Time now);
  // Appends to `out`: the daemon handles heartbeats with one reused list. An
  // ack is a SendFrameAction sharing this run's encoded HeartbeatAck, so an
  // ack allocates nothing.
  void OnHeartbeat(ConnId conn, const HeartbeatView& hb, Time now, Actions& out);
  Actions OnWorkerFailed(ConnId conn, const WorkerFailed& failed, Time now);
  Actions OnWorkersSucceeded(ConnId conn, const WorkersSucceeded& done, Time now);
  Actions OnLeave(ConnId conn, const Leave& leave, Time now);
  Actions OnDisconnect(ConnId conn, Time now);
  Actions OnTick(Time now);
  // The daemon's loop was stalled: no node is judged silent for the stall.
  void OnDaemonStalled(Time now);

  Phase phase() const { return phase_; }
  bool ended() const { return phase_ == Phase::kEnded; }
  Time ended_at() const { return ended_at_; }
  // How many nodes the current generation has.
  size_t member_count() const;

  // Counters for /metrics.
  struct Counters {
    uint64_t generations = 0;
    uint64_t dead_nodes = 0;
    uint64_t heartbeats = 0;
    double round_seconds_total = 0;
    Counters& operator+=(const Counters& other) {
      generations += other.generations;
      dead_nodes += other.dead_nodes;
      heartbeats += other.heartbeats;
      round_seconds_total += other.round_seconds_total;
      return *this;
    }
  };
  const Counters& counters() const { return counters_; }

  // The status document of this run (see PROTOCOL.md "Status").
  nlohmann::json StatusJson(Time now) const;

  static const char* PhaseName(Phase phase);

 private:
  struct Node {
    std::string node_id;
    std::string host;
    ConnId conn = 0;  // 0: not connected
    Time last_seen;
    Time last_ack{};  // last HeartbeatAck sent
    std::optional<Time> disconnected_at;
    int local_world_size = 1;
    std::string store_addr;
    int store_port = 0;
    uint64_t join_seq = 0;
    bool member = false;  // in the current generation
    int group_rank = -1;  // in the current generation
    int global_rank_offset = 0;
    bool succeeded = false;              // its workers of the current generation all exited 0
    std::optional<Assignment> reported;  // what it ran when it (re)joined, for rebuilding
  };

  Node* FindNode(std::string_view node_id);
  // The node `node_id` when `conn` is its connection; nullptr for a node this
  // run does not have (declared dead, never joined) or a report that came on
  // another connection than the node's.
  Node* NodeOn(ConnId conn, std::string_view node_id);
  // The node bound to `conn`, through conn_node_.
  Node* FindByConn(ConnId conn);
  // node.conn = conn, keeping conn_node_ in step; 0 unbinds. Every change of
  // a node's connection goes through here (or NodeGone, which erases it).
  void BindConn(Node& node, ConnId conn);
  // This run's HeartbeatAck for its current generation, encoded once per
  // generation and shared by every ack sent.
  const std::shared_ptr<const std::string>& AckFrame();
  // When OnTick() must look at `node`: the end of its disconnect grace, or
  // of its heartbeat silence.
  Time DeadlineOf(const Node& node) const;
  // Called wherever a node's deadline may move earlier (it joined, it
  // disconnected): the node scan of OnTick() must not be skipped past it.
  void NoteDeadline(const Node& node);
  Actions Refuse(ConnId conn, ErrorCode code, const std::string& message, bool fatal);
  // The refusals every report can meet (not fatal: the agent joins again or
  // waits for the current assignment).
  Actions RefuseUnknownNode(ConnId conn, std::string_view node_id);
  Actions RefuseStaleGeneration(ConnId conn, uint64_t generation);
  // Whether a member's outcome report for `generation` is about the running one.
  bool IsCurrentMemberReport(const Node& node, uint64_t generation) const;
  void SendAssignment(const Node& node, Actions& out) const;
  // These append what to send to `out`.
  void StartGeneration(Time now, const std::string& why, Actions& out);
  // Ends the running generation: drains its members' workers first (see
  // "Draining" above), then starts the next one. `stopped`: a member known
  // to have no workers left (it just reported their failure).
  void NextGeneration(Time now, const std::string& why, Actions& out,
                      std::string_view stopped = {});
  // A draining member's workers are gone; the next generation starts when
  // it was the last one.
  void DrainedNode(const std::string& node_id, Time now, Actions& out);
  // Starts the next generation once no member of the drain is left.
  void FinishDrainIfDone(Time now, Actions& out);
  void NodeGone(const std::string& node_id, Time now, const std::string& why, Actions& out);
  void EndRun(bool succeeded, const std::string& message, Time now, Actions& out);
  void TryFinishRebuild(Time now, bool deadline_passed, Actions& out);
  void Log(Actions& out, bool warning, const std::string& line) const;
  void SummarizeGeneration();
  std::vector<Node*> OrderedForNextGeneration();

  std::string run_id_;
  Settings settings_;
  int min_nodes_;
  int max_nodes_;
  int max_restarts_;
  Phase phase_ = Phase::kGathering;
  uint64_t generation_ = 0;
  int restart_count_ = 0;
  uint64_t next_join_seq_ = 0;
  // By node id; dead nodes are erased. Hashed: a heartbeat looks its node up
  // 20,000 times a second at 10,000 nodes (0.5 s keep_alive_interval).
  // Nothing depends on its order.
  struct StringHash {
    using is_transparent = void;  // find() by string_view, without a copy
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, Node, StringHash, std::equal_to<>> nodes_;
  // Node id by connection, for every node with conn != 0, so a disconnect
  // finds its node without a scan of every node.
  std::unordered_map<ConnId, std::string> conn_node_;
  // Members of the current generation whose workers all succeeded: the run
  // succeeds when it reaches summary_.group_world_size. Reset with it.
  int succeeded_members_ = 0;
  std::shared_ptr<const std::string> ack_frame_;  // see AckFrame()
  uint64_t ack_frame_generation_ = 0;
  // No node's deadline is earlier than this, so OnTick() skips its scan of
  // every node until then (at 10,000 nodes the scan at every 50 ms tick
  // cost more than the heartbeats). Heartbeats only move deadlines later.
  Time next_node_check_{};
  Time gathering_since_;
  std::optional<Time> round_deadline_;  // last call, admission or rebuild window
  Time round_opened_;
  Time ended_at_{};
  std::string end_message_;
  bool end_succeeded_ = false;
  Counters counters_;
  // What every member's assignment shares, computed when a generation starts.
  struct GenerationSummary {
    int group_world_size = 0;
    int world_size = 0;
    std::string master_addr;
    int master_port = 0;
  };
  GenerationSummary summary_;
  // The generation being drained: why it ends, until when to wait, and the
  // members whose workers may still run.
  struct Drain {
    std::string why;
    Time deadline;
    std::set<std::string> running;
  };
  std::optional<Drain> drain_;
};

}  // namespace muster::rdzv
