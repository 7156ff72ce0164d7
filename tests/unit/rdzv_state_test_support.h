// Helpers for the rendezvous state-machine tests: a fake cluster of agents
// that talk to one RendezvousCore through events on a hand-driven clock, and
// the invariants every generation must satisfy.
//
//   FakeCluster c(/*min=*/2, /*max=*/3);
//   c.AddAgents(3);
//   c.JoinAll();                       // MAX joined: the round closes at once
//   auto gen = c.ExpectNewGeneration();  // invariants hold, generation grew
//   c.Disconnect(1);
//   c.Advance(c.settings().disconnect_grace);  // node1 is dead: generation 2
//
// Every message the core sends is delivered to the agent owning the
// connection (a shared encoded frame, SendFrameAction, is decoded first, so
// a test sees a HeartbeatAck like any other message); while delivering, the cluster checks that no
// agent ever sees its generation go backwards, that one generation number always means one
// assignment, and that a generation number seen for the first time is newer
// than every one seen before.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "rendezvous/protocol/frame_codec.h"
#include "rendezvous/protocol/message_codec.h"
#include "rendezvous/state/lead_change.h"
#include "rendezvous/state/rendezvous_core.h"

namespace muster::rdzv::testing {

// The daemon's defaults (last call 2 s, close 3 s, heartbeat every 0.5 s,
// silent after 1.25 s, disconnect grace 0.15 s) with a join_timeout short enough to walk.
inline Settings TestSettings() {
  Settings s;
  s.join_timeout = Duration(30'000);
  return s;
}

// The connection and message an action sends: a SendAction's message, or
// the decoded bytes of a SendFrameAction, which must be exactly one valid
// frame. nullopt for actions that send nothing.
inline std::optional<std::pair<ConnId, Message>> SentMessage(const Action& action) {
  if (const auto* send = std::get_if<SendAction>(&action)) {
    return std::pair<ConnId, Message>(send->conn, send->message);
  }
  const auto* send_frame = std::get_if<SendFrameAction>(&action);
  if (send_frame == nullptr) return std::nullopt;
  REQUIRE(send_frame->frame != nullptr);
  FrameDecoder decoder;
  decoder.Feed(*send_frame->frame);
  FrameResult frame = decoder.Next();
  REQUIRE(frame.state == FrameResult::kFrame);
  auto message = Decode(frame.type, frame.payload);
  REQUIRE(message.ok());
  REQUIRE(decoder.buffered_bytes() == 0);  // nothing after the one frame
  return std::pair<ConnId, Message>(send_frame->conn, std::move(message).value());
}

// The messages of type T that `actions` sends to `conn`.
template <typename T>
std::vector<T> SentTo(const Actions& actions, ConnId conn) {
  std::vector<T> found;
  for (const Action& action : actions) {
    auto sent = SentMessage(action);
    if (!sent || sent->first != conn) continue;
    if (const auto* m = std::get_if<T>(&sent->second)) found.push_back(*m);
  }
  return found;
}

// How many messages of type T `actions` sends, to anyone.
template <typename T>
int CountSent(const Actions& actions) {
  int n = 0;
  for (const Action& action : actions) {
    auto sent = SentMessage(action);
    if (sent && std::holds_alternative<T>(sent->second)) ++n;
  }
  return n;
}

inline bool Closes(const Actions& actions, ConnId conn) {
  return std::any_of(actions.begin(), actions.end(), [conn](const Action& action) {
    const auto* close = std::get_if<CloseAction>(&action);
    return close != nullptr && close->conn == conn;
  });
}

inline bool Logged(const Actions& actions, const std::string& fragment) {
  return std::any_of(actions.begin(), actions.end(), [&fragment](const Action& action) {
    const auto* log = std::get_if<LogAction>(&action);
    return log != nullptr && log->line.find(fragment) != std::string::npos;
  });
}

// One generation's assignments (one per member node, any order) must form a
// valid job: group ranks 0..N-1 with exactly one master, global ranks
// contiguous 0..W-1 (offsets are prefix sums of local_world_size in group
// rank order), and every member agreeing on the job-wide fields.
inline void CheckGenerationInvariants(std::vector<Assignment> members) {
  REQUIRE_FALSE(members.empty());
  std::sort(members.begin(), members.end(),
            [](const Assignment& a, const Assignment& b) { return a.group_rank < b.group_rank; });
  const Assignment& master = members.front();
  int masters = 0;
  int offset = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    const Assignment& a = members[i];
    INFO("group_rank " << a.group_rank << " of generation " << a.generation);
    if (a.group_rank == 0) ++masters;
    CHECK(a.group_rank == static_cast<int>(i));
    CHECK(a.group_world_size == static_cast<int>(members.size()));
    CHECK(a.local_world_size >= 1);
    CHECK(a.global_rank_offset == offset);
    offset += a.local_world_size;
    CHECK(a.run_id == master.run_id);
    CHECK(a.generation == master.generation);
    CHECK(a.master_addr == master.master_addr);
    CHECK(a.master_port == master.master_port);
    CHECK(a.restart_count == master.restart_count);
    CHECK(a.max_restarts == master.max_restarts);
  }
  CHECK(masters == 1);
  for (const Assignment& a : members) CHECK(a.world_size == offset);
}

// One agent as the daemon sees it: a node id, a store it would host as
// master, and the connection it talks on.
struct Agent {
  std::string node_id;
  std::string host;
  int local_world_size = 1;
  std::string store_addr;
  int store_port = 0;
  ConnId conn = 0;      // 0: not connected
  bool silent = false;  // connected, but sends no heartbeats (a hung agent or a cut link)
  std::optional<Assignment> assignment;  // the latest one received
  // The generation its workers run (0: none), what its heartbeats carry. Set
  // by an assignment; cleared by Waiting (it stops them, and heartbeats at
  // once, as muster's agent does) or by reporting a failure.
  uint64_t running = 0;
  uint64_t step = 0;                 // Heartbeat::step its heartbeats carry (0: none reported)
  std::vector<uint64_t> compute_us;  // Heartbeat::compute_us its heartbeats carry
  bool stopping = false;             // told to stop by Waiting; heartbeats once delivery ends
  std::optional<Waiting> waiting;    // the latest Waiting since that assignment
  std::optional<RunEnded> ended;
  std::vector<Error> errors;
  std::vector<HeartbeatAck> acks;  // every one received
  int closed = 0;                  // how many times the daemon closed its connection
};

class FakeCluster {
 public:
  FakeCluster(int min_nodes, int max_nodes, int max_restarts = 0,
              Settings settings = TestSettings())
      : min_nodes_(min_nodes),
        max_nodes_(max_nodes),
        max_restarts_(max_restarts),
        settings_(settings),
        core_(settings) {}

  static constexpr const char* kRunId = "job";

  // A new agent, not yet joined: "node<i>" on host "host<i>", store on
  // "10.<i>:<29500+i>" so every node's store is told apart. Returns its index.
  int AddAgent(int local_world_size = 1) {
    const int i = static_cast<int>(agents_.size());
    Agent a;
    a.node_id = "node" + std::to_string(i);
    a.host = "host" + std::to_string(i);
    a.local_world_size = local_world_size;
    a.store_addr = "10." + std::to_string(i);
    a.store_port = 29500 + i;
    agents_.push_back(a);
    return i;
  }
  void AddAgents(int n, int local_world_size = 1) {
    for (int k = 0; k < n; ++k) AddAgent(local_world_size);
  }

  // The Join agent `i` sends: this run's --nnodes and max_restarts, no report.
  rdzv::Join MakeJoin(int i) const {
    const Agent& a = agents_.at(static_cast<size_t>(i));
    rdzv::Join j;
    j.run_id = kRunId;
    j.node_id = a.node_id;
    j.host = a.host;
    j.local_world_size = a.local_world_size;
    j.min_nodes = min_nodes_;
    j.max_nodes = max_nodes_;
    j.max_restarts = max_restarts_;
    j.store_addr = a.store_addr;
    j.store_port = a.store_port;
    j.last_generation = a.assignment ? a.assignment->generation : 0;
    return j;
  }

  // Sends any message from agent `i`, on a new connection if it has none.
  Actions Send(int i, const Message& message) {
    Agent& a = agent(i);
    if (a.conn == 0) {
      a.conn = next_conn_++;
      conn_agent_[a.conn] = i;
    }
    return Deliver(core_.Handle(MessageEvent{a.conn, message}, now_));
  }

  Actions Join(int i) { return Send(i, MakeJoin(i)); }
  // Joins again reporting the assignment its workers run under (after a
  // reconnect, or to a restarted daemon).
  Actions Rejoin(int i) {
    rdzv::Join j = MakeJoin(i);
    j.current = agent(i).assignment;
    return Send(i, j);
  }
  Actions JoinAll() {
    Actions all;
    for (int i = 0; i < size(); ++i) Append(all, Join(i));
    return all;
  }

  uint64_t GenerationOf(int i) const {
    const Agent& a = agents_.at(static_cast<size_t>(i));
    return a.assignment ? a.assignment->generation : 0;
  }
  Actions Heartbeat(int i) {
    return Send(i, rdzv::Heartbeat{kRunId, agent(i).node_id, agent(i).running, agent(i).step,
                                   agent(i).compute_us});
  }
  // A heartbeat from every connected agent that is not silent.
  Actions HeartbeatAll() {
    Actions all;
    for (int i = 0; i < size(); ++i) {
      if (agent(i).conn != 0 && !agent(i).silent && !agent(i).ended) Append(all, Heartbeat(i));
    }
    return all;
  }

  Actions Fail(int i, int exit_code = 1) { return FailAt(i, GenerationOf(i), exit_code); }
  Actions FailAt(int i, uint64_t generation, int exit_code = 1) {
    if (agent(i).running == generation) agent(i).running = 0;  // its workers are gone
    return Send(i, WorkerFailed{kRunId, agent(i).node_id, generation, exit_code, "boom"});
  }
  Actions Succeed(int i) { return SucceedAt(i, GenerationOf(i)); }
  Actions SucceedAt(int i, uint64_t generation) {
    return Send(i, WorkersSucceeded{kRunId, agent(i).node_id, generation});
  }

  // The agent's connection drops (the agent may reconnect with Rejoin).
  Actions Disconnect(int i) {
    Agent& a = agent(i);
    REQUIRE(a.conn != 0);
    const ConnId conn = a.conn;
    a.conn = 0;
    return Deliver(core_.Handle(DisconnectEvent{conn}, now_));
  }

  Actions Tick() { return Deliver(core_.Handle(TickEvent{}, now_)); }
  // Moves the clock by `d` with nobody talking, then ticks.
  Actions Advance(Duration d) {
    now_ += d;
    return Tick();
  }
  // Lets `d` pass with the agents alive: every keep_alive_interval (and at
  // the end) each connected, non-silent agent heartbeats, then time ticks.
  Actions Run(Duration d) {
    Actions all;
    const Time end = now_ + d;
    while (now_ < end) {
      now_ = std::min(end, now_ + settings_.keep_alive_interval);
      Append(all, HeartbeatAll());
      Append(all, Tick());
    }
    return all;
  }

  // The daemon restarts: a fresh core, every connection gone; agents keep
  // their assignments (to report them with Rejoin).
  void RestartDaemon() { Replace(RendezvousCore(settings_)); }
  // Another replica takes the lead, starting from `takeover`. Its core runs
  // the settings a replica's daemon gives a leader (LeaderSettings), as
  // production does on a change of lead (DecideLeadChange).
  void TakeOver(Takeover takeover) {
    Replace(RendezvousCore(LeaderSettings(settings_), std::move(takeover)));
  }
  // What a leader would keep in etcd now, by run id.
  std::map<std::string, RunRecord, std::less<>> Records() const {
    std::map<std::string, RunRecord, std::less<>> out;
    for (const RunRecord& r : core_.Records()) out[r.run_id] = r;
    return out;
  }

  // The latest assignment received on each connection still open.
  std::map<ConnId, Assignment> LatestAssignmentPerConn() const {
    std::map<ConnId, Assignment> latest;
    for (const Agent& a : agents_) {
      if (a.conn != 0 && a.assignment) latest[a.conn] = *a.assignment;
    }
    return latest;
  }

  // The newest generation any agent has been assigned (0: none yet).
  uint64_t generation() const {
    uint64_t g = 0;
    for (const Agent& a : agents_) g = std::max(g, a.assignment ? a.assignment->generation : 0);
    return g;
  }
  // Agent indices holding the newest generation, by group rank.
  std::vector<int> Members() const {
    std::vector<int> members;
    const uint64_t g = generation();
    for (int i = 0; i < size(); ++i) {
      const Agent& a = agents_[static_cast<size_t>(i)];
      if (g != 0 && a.assignment && a.assignment->generation == g) members.push_back(i);
    }
    std::sort(members.begin(), members.end(), [this](int x, int y) {
      return agents_[static_cast<size_t>(x)].assignment->group_rank <
             agents_[static_cast<size_t>(y)].assignment->group_rank;
    });
    return members;
  }

  // Checks that a generation newer than the last one checked has formed,
  // that it holds the generation invariants, and that its master address is
  // the store of its group rank 0. Returns its assignments by group rank.
  std::vector<Assignment> ExpectNewGeneration() {
    const uint64_t g = generation();
    REQUIRE(g > checked_generation_);
    checked_generation_ = g;
    std::vector<Assignment> members;
    for (int i : Members()) members.push_back(*agent(i).assignment);
    CheckGenerationInvariants(members);
    const Agent& master = agent(Members().front());
    CHECK(members.front().master_addr == master.store_addr);
    CHECK(members.front().master_port == master.store_port);
    return members;
  }
  // Checks that no generation formed since the last one checked.
  void ExpectNoNewGeneration() const { CHECK(generation() == checked_generation_); }

  // The run's phase as status reports it ("gathering", "running", ...;
  // "forgotten" once the core dropped it).
  std::string Phase() const {
    const StatusSnapshot status = core_.Status(kRunId, now_);
    if (status.runs.empty()) return "forgotten";
    return std::string(RunPhaseName(status.runs[0].phase));
  }

  Agent& agent(int i) { return agents_.at(static_cast<size_t>(i)); }
  const Agent& agent(int i) const { return agents_.at(static_cast<size_t>(i)); }
  int size() const { return static_cast<int>(agents_.size()); }
  RendezvousCore& core() { return core_; }
  const Settings& settings() const { return settings_; }
  Time now() const { return now_; }

 private:
  // `core` serves from now on; every connection is gone.
  void Replace(RendezvousCore core) {
    core_ = std::move(core);
    conn_agent_.clear();
    for (Agent& a : agents_) a.conn = 0;
  }

  static void Append(Actions& to, const Actions& more) {
    to.insert(to.end(), more.begin(), more.end());
  }

  // Hands every message to the agent owning the connection; returns `actions`.
  Actions Deliver(Actions actions) {
    for (const Action& action : actions) {
      if (const auto* close = std::get_if<CloseAction>(&action)) {
        auto it = conn_agent_.find(close->conn);
        if (it == conn_agent_.end()) continue;
        Agent& a = agent(it->second);
        if (a.conn == close->conn) {
          ++a.closed;
          a.conn = 0;
        }
        continue;
      }
      auto sent = SentMessage(action);
      if (!sent) continue;
      auto it = conn_agent_.find(sent->first);
      REQUIRE(it != conn_agent_.end());
      Agent& a = agent(it->second);
      std::visit(
          [&](const auto& m) {
            using M = std::decay_t<decltype(m)>;
            if constexpr (std::is_same_v<M, AssignmentMessage>) {
              Receive(a, m.assignment);
            } else if constexpr (std::is_same_v<M, Waiting>) {
              a.waiting = m;
              if (a.running != 0) {
                a.running = 0;
                a.stopping = true;
              }
            } else if constexpr (std::is_same_v<M, RunEnded>) {
              a.ended = m;
            } else if constexpr (std::is_same_v<M, Error>) {
              a.errors.push_back(m);
            } else if constexpr (std::is_same_v<M, HeartbeatAck>) {
              a.acks.push_back(m);
            }
          },
          sent->second);
    }
    // Agents told to stop have stopped their workers: each says so with a
    // heartbeat, whose answers are part of what this delivery caused.
    for (int i = 0; i < size(); ++i) {
      Agent& a = agent(i);
      if (!a.stopping) continue;
      a.stopping = false;
      if (a.conn != 0 && !a.silent && !a.ended) Append(actions, Heartbeat(i));
    }
    return actions;
  }

  void Receive(Agent& a, const Assignment& next) {
    INFO("node " << a.node_id << " receives generation " << next.generation);
    CHECK(next.run_id == kRunId);
    if (a.assignment) {
      // Never backwards; one generation number is one assignment.
      CHECK(next.generation >= a.assignment->generation);
      if (next.generation == a.assignment->generation) CHECK(next == *a.assignment);
    }
    if (!seen_generations_.count(next.generation)) {
      // A generation number seen for the first time is newer than all before.
      CHECK((seen_generations_.empty() || next.generation > *seen_generations_.rbegin()));
      seen_generations_.insert(next.generation);
    }
    a.assignment = next;
    a.running = next.generation;
    a.waiting.reset();
  }

  int min_nodes_;
  int max_nodes_;
  int max_restarts_;
  Settings settings_;
  RendezvousCore core_;
  Time now_{};
  ConnId next_conn_ = 100;
  std::vector<Agent> agents_;
  std::map<ConnId, int> conn_agent_;
  std::set<uint64_t> seen_generations_;
  uint64_t checked_generation_ = 0;
};

// A run of `max_nodes` agents that all joined: generation 1 runs (checked).
inline FakeCluster RunningCluster(int min_nodes, int max_nodes, int max_restarts) {
  FakeCluster c(min_nodes, max_nodes, max_restarts);
  c.AddAgents(max_nodes);
  c.JoinAll();
  c.ExpectNewGeneration();
  return c;
}

// Three agents (2, 1 and 4 workers; at most 3 restarts) that reached
// generation 2 after one worker failure.
inline FakeCluster AtGeneration2AfterOneRestart(int min_nodes) {
  FakeCluster c(min_nodes, 3, /*max_restarts=*/3);
  c.AddAgent(2);
  c.AddAgent(1);
  c.AddAgent(4);
  c.JoinAll();
  c.ExpectNewGeneration();
  c.Fail(1);
  auto gen = c.ExpectNewGeneration();
  REQUIRE(gen.front().generation == 2);
  REQUIRE(gen.front().restart_count == 1);
  return c;
}

}  // namespace muster::rdzv::testing
