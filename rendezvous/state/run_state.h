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
// is left, or after drain_timeout (settings.h), does the next generation start: the
// workers of two generations never run at once, on any node.
//   kRebuilding --all members of the reported generation back---> kRunning (same generation)
//   kRebuilding --close_timeout---------------------------------> kRunning (new gen) | kGathering
//
// Group ranks of a new generation come from AssignRanks (rank_assignment.h):
// members of the previous generation keep their relative order, newcomers
// follow in join order; group rank 0 is the master and its agent's store is
// MASTER_ADDR:MASTER_PORT. Generations only grow; messages about older
// generations are refused as stale.
//
// The code is split by concern: run_state.cc handles the events,
// run_state_rebuild.cc rebuilds a run after a daemon restart,
// run_state_status.cc takes its status snapshot, run_state_history.cc keeps
// the history the status page shows; node_table.h keeps the
// nodes and their liveness, rank_assignment.h picks the ranks.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "rendezvous/state/compute_stragglers.h"
#include "rendezvous/state/events.h"
#include "rendezvous/state/goodput.h"
#include "rendezvous/state/node_table.h"
#include "rendezvous/state/run_history.h"
#include "rendezvous/state/run_phase.h"
#include "rendezvous/state/run_record.h"
#include "rendezvous/state/settings.h"
#include "rendezvous/state/status_snapshot.h"
#include "rendezvous/state/straggler_detector.h"

namespace muster::rdzv {

class RunState {
 public:
  using Phase = RunPhase;

  // After a replica took the lead (`takeover`, run_record.h): a run it meets
  // before rebuild_hold_until is rebuilt, whoever comes first, and the
  // rebuild waits for the last generation's members until then (instead of
  // close_timeout), when every agent that has not come back has fenced
  // itself; and this run's record, unless it ended, seeds its settings, its
  // generation numbers (every new one above the record's) and, when the run
  // does not start by a rebuild (whose reports carry the count, and whose
  // failures are reported again), its restarts used.
  RunState(std::string run_id, const Join& first, const Settings& settings, Time now,
           const Takeover& takeover = {});

  // What a replicated rendezvous keeps of this run in etcd.
  RunRecord Record() const;

  // Requests from a node of this run. REQUIRES: the message's run_id is this run's.
  // `peer_addr`: where the connection comes from (MessageEvent::peer_addr).
  Actions OnJoin(ConnId conn, const Join& join, const std::string& peer_addr, Time now);
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
  size_t member_count() const { return nodes_.member_count(); }

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

  // This run as status shows it at `now` (heartbeat ages are measured to it).
  RunStatus Status(Time now) const;

  // Where this run adds the daemon's recent events (run_history.h); shared
  // with every run of the daemon. Null (the default): none are kept.
  void set_event_log(std::shared_ptr<EventLog> events) { events_ = std::move(events); }

 private:
  using Node = RunNode;

  // This run's HeartbeatAck for its current generation, encoded once per
  // generation and shared by every ack sent.
  const std::shared_ptr<const std::string>& AckFrame();
  // The refusals every report can meet (not fatal: the agent joins again or
  // waits for the current assignment).
  Actions RefuseUnknownNode(ConnId conn, std::string_view node_id) const;
  Actions RefuseStaleGeneration(ConnId conn, uint64_t generation) const;
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
  // Judges the step rates of the members still training (straggler_detector.h)
  // and logs who was flagged or cleared: event=straggler, event=straggler_cleared.
  void CheckStragglers(Time now, Actions& out);

  // Training progress (run_state_progress.cc).
  // A member's heartbeat of the current generation: its step and its
  // workers' compute times.
  void NoteProgress(Node& node, const HeartbeatView& hb, Time now);
  // Judges the ranks' compute times (compute_stragglers.h) and logs who was
  // flagged or cleared: event=straggler rank=R host=H compute_ms= median_ms=.
  void CheckComputeStragglers(Time now, Actions& out);
  // Feeds the run's step (the oldest of its members') to the goodput meter.
  void MeterGoodput(Time now);
  // A new generation: steps and compute times count afresh.
  void RestartProgress(Time now);
  // The run ends: logs event=goodput when a step was ever reported.
  void FinishGoodput(bool succeeded, Time now, Actions& out);
  // A draining member's workers are gone; the next generation starts when
  // it was the last one.
  void DrainedNode(const std::string& node_id, Time now, Actions& out);
  // Starts the next generation once no member of the drain is left.
  void FinishDrainIfDone(Time now, Actions& out);
  void NodeGone(const std::string& node_id, Time now, const std::string& why, Actions& out);
  void EndRun(bool succeeded, const std::string& message, Time now, Actions& out);
  void Log(Actions& out, bool warning, const std::string& line) const;
  void SummarizeGeneration();
  // The run is below --nnodes MIN: no node is a member, and every connected
  // one is told to wait (stopping its workers) for `reason`.
  void WaitForReplacements(const std::string& reason, Actions& out);

  // Rebuilding after a daemon restart (run_state_rebuild.cc).
  // Enters kRebuilding: agents report what they run until close_timeout, or
  // the takeover hold while it lasts.
  void StartRebuild(Time now);
  // Carries on with the reported generation once all its members are back;
  // once `deadline_passed`, starts a new one without the missing ones.
  void TryFinishRebuild(Time now, bool deadline_passed, Actions& out);
  // The reporters become the only members, at the ranks their reports name;
  // the run's restart count rises to the highest one reported.
  void AdoptReporters(const std::vector<Node*>& reporters);

  // The history the status page shows (run_state_history.cc).
  // A daemon event of this run, when an event log is set.
  void NoteEvent(Time now, std::string kind, std::string node_id, std::string text);
  // `node` leaves the run now: `why` is NodeTable's ("disconnected",
  // "silent") or "left".
  void NoteDeparted(const Node& node, const std::string& why, Time now);
  // The generation just started (or rebuilt) at `now`, with `cause`.
  void NoteGeneration(Time now, GenerationCause cause);
  // Adds the history to `run`, ages measured to `now`.
  void AddHistory(RunStatus& run, Time now) const;

  std::string run_id_;
  Settings settings_;
  std::optional<Time> rebuild_hold_until_;
  int min_nodes_;
  int max_nodes_;
  int max_restarts_;
  Phase phase_ = Phase::kGathering;
  uint64_t generation_ = 0;
  int restart_count_ = 0;
  // No generation at or below this is handed out (a new leader's record).
  uint64_t generation_floor_ = 0;
  uint64_t next_join_seq_ = 0;
  // Dead nodes are erased.
  NodeTable nodes_;
  // Members of the current generation whose workers all succeeded: the run
  // succeeds when it reaches summary_.group_world_size. Reset with it.
  int succeeded_members_ = 0;
  std::shared_ptr<const std::string> ack_frame_;  // see AckFrame()
  uint64_t ack_frame_generation_ = 0;
  Time gathering_since_;
  std::optional<Time> round_deadline_;  // last call, admission or rebuild window
  Time round_opened_;
  Time ended_at_{};
  std::string end_message_;
  bool end_succeeded_ = false;
  Counters counters_;
  // What the status page shows of the past (run_history.h), and why the next
  // generation forms: the latest cause wins, as Drain::why does.
  RunHistory history_;
  std::shared_ptr<EventLog> events_;
  GenerationCause next_cause_;
  // What every member's assignment shares, computed when a generation starts.
  struct GenerationSummary {
    int group_world_size = 0;
    int world_size = 0;
    std::string master_addr;
    int master_port = 0;
    // For the master's assignment only (AssignmentMessage::member_addrs).
    std::vector<std::string> member_addrs;
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
  // Stragglers: judged every kStragglerCheckInterval once any node of the
  // run reported a step (a run that reports none costs nothing).
  static constexpr Duration kStragglerCheckInterval{1'000};
  StragglerDetector stragglers_;
  bool steps_reported_ = false;
  Time next_straggler_check_{};
  std::vector<MemberRate> member_rates_;  // reused by CheckStragglers
  // The slow rank in lock-step training, by compute time, and the run's
  // goodput, both fed by heartbeats and judged with the stragglers.
  ComputeStragglers compute_stragglers_;
  GoodputMeter goodput_;
  uint64_t run_step_ = 0;                 // the oldest of the members' steps, in this generation
  std::optional<Goodput> final_goodput_;  // once the run ended
};

}  // namespace muster::rdzv
