// StatusSnapshot: what the rendezvous knows of its runs at one instant, as
// plain values. RendezvousCore takes it; the daemon formats it into the
// status document (rendezvous/daemon/status_json.h) that `muster status`
// reads. Nothing here decides anything or knows JSON.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rendezvous/state/goodput.h"
#include "rendezvous/state/run_phase.h"

namespace muster::rdzv {

// One node of a run.
struct NodeStatus {
  std::string node_id;
  std::string host;
  bool member = false;  // in the current generation; otherwise it waits
  bool connected = false;
  int local_world_size = 1;
  std::chrono::milliseconds heartbeat_age{0};  // since the node was last heard
  // Members only: its group rank, and the first of its global ranks, which
  // run to global_rank_offset + local_world_size - 1.
  int group_rank = -1;
  int global_rank_offset = 0;
  // Members only: steps per second over the last few seconds (step_rates.h);
  // absent while its workers report no steps. Flagged a straggler
  // (straggler_detector.h).
  std::optional<double> steps_per_second;
  bool straggler = false;
  // Members only: each worker's own time per step (what it spends not
  // waiting for the others), by local rank; nullopt where not known. Empty
  // while none reports one.
  std::vector<std::optional<double>> compute_ms;
  // The node's global ranks flagged slow by their compute time
  // (compute_stragglers.h). A node with one is also `straggler`.
  std::vector<int> slow_ranks;
};

// A rank flagged slow by its compute time.
struct SlowRank {
  int rank = 0;
  std::string node_id;
  std::string host;
  std::optional<double> compute_ms;
};

// One run.
struct RunStatus {
  std::string run_id;
  RunPhase phase = RunPhase::kGathering;
  uint64_t generation = 0;  // 0 until a first generation starts
  int min_nodes = 0;
  int max_nodes = 0;
  int restart_count = 0;
  int max_restarts = 0;
  // Members by group rank, then the other nodes by node id: a stable,
  // readable order.
  std::vector<NodeStatus> nodes;
  // The median of the members' steps per second (absent: none reports), and
  // how many members are flagged stragglers.
  std::optional<double> median_steps_per_second;
  int stragglers = 0;
  // The median of the ranks' compute times (absent: none reports), and the
  // ranks flagged slow, by rank.
  std::optional<double> median_compute_ms;
  std::vector<SlowRank> slow_ranks;
  // How much of the run's time trained, so far or at its end (goodput.h);
  // absent while no step was reported.
  std::optional<Goodput> goodput;
  // How it ended; set exactly when phase is kEnded.
  struct Outcome {
    bool succeeded = false;
    std::string message;
  };
  std::optional<Outcome> outcome;
  // The status page's history (run_history.h), oldest first; ages are to
  // the snapshot's instant. `muster status` does not show them.
  struct Generation {
    uint64_t generation = 0;
    std::chrono::milliseconds age{0};  // since it formed
    int nodes = 0;
    int world_size = 0;
    std::string reason;  // GenerationCause::kJoined, kNodeLost, ...
    std::string node_id;
    std::string detail;
    // How long training stood still before it stepped (GenerationRecord).
    std::optional<std::chrono::milliseconds> stood_still;
  };
  std::vector<Generation> generations;
  struct Departed {
    NodeStatus node;    // as it was when it went (member: the ranks it held)
    std::string state;  // "dead" or "left"
    std::string why;
    std::chrono::milliseconds age{0};  // since it went
    uint64_t generation = 0;
  };
  std::vector<Departed> departed;
};

// A replica of a replicated rendezvous: who answered, and who leads.
struct ReplicaSummary {
  std::string self;                   // the answering replica's advertised HOST:PORT
  std::string role;                   // "leader", "standby", "starting"
  uint64_t epoch = 0;                 // the leader's
  std::string leader;                 // its HOST:PORT; empty: none known
  std::vector<std::string> replicas;  // every replica registered in etcd, sorted
};

// One of the daemon's recent events (run_history.h), for the status page.
struct EventStatus {
  std::chrono::milliseconds age{0};
  std::string kind;
  std::string run_id;
  std::string node_id;
  std::string text;
};

struct StatusSnapshot {
  std::vector<RunStatus> runs;            // by run id
  std::optional<ReplicaSummary> replica;  // replicated only; the daemon fills it in
  std::vector<EventStatus> events;        // the daemon's recent events, oldest first
};

}  // namespace muster::rdzv
