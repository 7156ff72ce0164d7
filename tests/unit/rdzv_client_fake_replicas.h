// FakeReplicas: a replicated rendezvous and its agents on a hand-driven
// clock, for failover tests. Each replica that leads runs a real
// RendezvousCore; each agent runs a real ClientMachine (client_machine.h);
// between them a fake network (1 ms a hop) that a test can cut, and a fake
// etcd that holds the leader's key under a lease.
//
//   FakeReplicas f(/*replicas=*/3, /*agents=*/3);
//   f.RunFor(3s);                  // R0 leads (epoch 1); generation 1 forms
//   f.Kill(0);                     // SIGKILL: its connections close
//   f.RunFor(6s);                  // R1 leads (epoch 2); the agents follow
//   CHECK(f.fences() == 0);
//
// A replica runs the daemon's own rules (rendezvous/daemon/rendezvous_server.cc
// around its core): every tick (50 ms) the election tells each living
// replica what etcd holds (a ReplicaStatus), and a change of lead is carried
// out as DecideLeadChange (lead_change.h) says: connections close, and a new
// leader builds its core from the run records in etcd, with its hold and
// widened heartbeat_timeout. A first message is answered as AnswerHello
// (hello_gate.h) decides: a serving leader welcomes and hands the rest to
// its core (ticked every 50 ms); any other replica answers not_leader or
// no_leader and closes. The lease is renewed every tick while the leader is
// alive and reaches etcd; once it has run out, the first replica that is
// alive, reachable and not hung leads.
//
// An agent's workers run the generation of the last assignment it was
// delivered, until Waiting, the run's end or a fence stops them. After
// every event the invariant of PROTOCOL.md ("Why no generation forms behind
// a kept worker") is checked: no agent's workers run a generation older than
// one formed without that agent.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "common/clock.h"
#include "rendezvous/client/client_machine.h"
#include "rendezvous/state/hello_gate.h"
#include "rendezvous/state/lead_change.h"
#include "rendezvous/state/rendezvous_core.h"
#include "rendezvous/state/replica_status.h"
#include "tests/unit/rdzv_state_test_support.h"

namespace muster::rdzv::testing {

class FakeReplicas {
 public:
  using Duration = std::chrono::milliseconds;
  static constexpr Duration kHop{1};
  static constexpr Duration kTick{50};
  static constexpr Duration kLease{2'000};

  // `min_nodes` of the run: a generation may form without the others.
  FakeReplicas(int replicas, int agents, int min_nodes = 2) {
    settings_.join_timeout = Duration(30'000);
    for (int r = 0; r < replicas; ++r) {
      replicas_.emplace_back();
      Replica& replica = replicas_.back();
      replica.endpoint = Endpoint{"10.0.0." + std::to_string(r + 1), 29400};
      replica.status.replicated = true;
      replica.status.role = replica::Role::kStandby;
      replica.status.self = replica.endpoint.Text();
    }
    std::vector<Endpoint> endpoints;
    for (const Replica& r : replicas_) endpoints.push_back(r.endpoint);
    for (int a = 0; a < agents; ++a) {
      ClientOptions options;
      options.endpoints = endpoints;
      options.settings = settings_;
      options.join.run_id = kRunId;
      options.join.node_id = "node" + std::to_string(a);
      options.join.host = "10.1.0." + std::to_string(a + 1);
      options.join.min_nodes = min_nodes;
      options.join.max_nodes = agents;
      options.join.max_restarts = 100;
      options.join.store_port = 29500;
      agents_.push_back(
          std::make_unique<AgentSim>(ClientMachine(options, static_cast<uint64_t>(a + 1))));
    }
    Elect();
    Publish();
    At(kTick, [this] { Tick(); });
    for (int a = 0; a < agents; ++a) Apply(a, agents_[a]->machine.Start(now_));
  }

  Time now() const { return now_; }
  const Settings& settings() const { return settings_; }

  // Processes every event due within `d`, in time order, checking the
  // invariant after each.
  void RunFor(Duration d) {
    const Time until = now_ + d;
    while (!events_.empty() && events_.begin()->first <= until) {
      auto node = events_.extract(events_.begin());
      now_ = node.key();
      node.mapped()();
      CheckNoWorkerBehindAGeneration();
    }
    now_ = until;
  }

  // Replica `r` is SIGKILLed: its connections close (the agents' hosts hear
  // it), and connects to it are refused. Its lease runs out at etcd.
  void Kill(int r) {
    Replica& replica = replicas_.at(static_cast<size_t>(r));
    replica.alive = false;
    DropEverything(r);
  }
  // Replica `r`'s host link goes down (or up): nothing reaches it or comes
  // from it, etcd included; connects to it go unanswered.
  void Cut(int r, bool down) { replicas_.at(static_cast<size_t>(r)).cut = down; }
  // Replica `r` accepts connections and reads nothing (a stopped process).
  void Hang(int r) { replicas_.at(static_cast<size_t>(r)).hung = true; }
  // Agent `a`'s host link goes down (or up).
  void CutAgent(int a, bool down) { agents_.at(static_cast<size_t>(a))->cut = down; }

  // The replica whose key etcd holds; -1 when none.
  int leader() const { return leader_; }
  uint64_t epoch() const { return epoch_; }
  // How many times agents fenced, in all.
  int fences() const {
    int n = 0;
    for (const auto& a : agents_) n += a->fences;
    return n;
  }
  // The generation agent `a`'s workers run; nullopt: none.
  std::optional<uint64_t> running(int a) const {
    const auto& agent = *agents_.at(static_cast<size_t>(a));
    if (!agent.running) return std::nullopt;
    return agent.running->generation;
  }
  const ClientMachine& machine(int a) const { return agents_.at(static_cast<size_t>(a))->machine; }
  // What happened, one line per event: the agents' log lines, fences,
  // elections and generations formed, with the time since the start.
  std::string transcript() const {
    std::string all;
    for (const std::string& line : transcript_) all += line + "\n";
    return all;
  }
  // The highest generation formed so far (0: none).
  uint64_t newest_generation() const { return members_.empty() ? 0 : members_.rbegin()->first; }

 private:
  static constexpr const char* kRunId = "run";

  struct Replica {
    Endpoint endpoint;
    bool alive = true;
    bool cut = false;
    bool hung = false;
    ReplicaStatus status;                  // what the election last told it
    std::unique_ptr<RendezvousCore> core;  // while it leads
  };
  struct AgentSim {
    explicit AgentSim(ClientMachine m) : machine(std::move(m)) {}
    ClientMachine machine;
    std::optional<Assignment> running;
    int fences = 0;
    bool cut = false;
    std::map<ClientTimer, uint64_t> timer_seq;  // a timer's arming; older ones are void
  };
  struct Conn {
    int agent = 0;
    LinkId link = 0;
    int replica = 0;
    bool greeted = false;
    bool agent_open = true;    // the agent has not closed it
    bool replica_open = true;  // the replica has not closed it
  };

  void Note(const std::string& line) {
    transcript_.push_back(
        "+" + std::to_string(std::chrono::duration_cast<Duration>(now_ - kStart).count()) + "ms " +
        line);
  }

  void At(Duration after, std::function<void()> what) {
    events_.emplace(now_ + after, std::move(what));
  }

  bool PathUp(int agent, int replica) const {
    return !agents_[static_cast<size_t>(agent)]->cut &&
           !replicas_[static_cast<size_t>(replica)].cut;
  }
  bool Reaches(int replica) const {
    const Replica& r = replicas_[static_cast<size_t>(replica)];
    return r.alive && !r.cut && !r.hung;
  }

  // The fake etcd: the leader's key and its lease.
  void Tick() {
    if (leader_ >= 0 && Reaches(leader_)) lease_until_ = now_ + kLease;
    // The key ran out: a leader still running (cut off) steps down below.
    if (leader_ >= 0 && now_ >= lease_until_) leader_ = -1;
    if (leader_ < 0) Elect();
    Publish();
    for (int r = 0; r < static_cast<int>(replicas_.size()); ++r) {
      if (replicas_[static_cast<size_t>(r)].core) {
        Carry(r, replicas_[static_cast<size_t>(r)].core->Handle(TickEvent{}, now_));
      }
    }
    At(kTick, [this] { Tick(); });
  }

  void Elect() {
    for (int r = 0; r < static_cast<int>(replicas_.size()); ++r) {
      if (!Reaches(r)) continue;
      leader_ = r;
      ++epoch_;
      Note("replica" + std::to_string(r) + " leads epoch " + std::to_string(epoch_));
      lease_until_ = now_ + kLease;
      return;
    }
  }

  // The election tells every living replica what etcd holds, and each
  // carries out a change of lead as the daemon does.
  void Publish() {
    for (int r = 0; r < static_cast<int>(replicas_.size()); ++r) {
      Replica& replica = replicas_[static_cast<size_t>(r)];
      if (!replica.alive) continue;
      ReplicaStatus seen = replica.status;
      seen.leading = leader_ == r;
      seen.role = seen.leading ? replica::Role::kLeader : replica::Role::kStandby;
      seen.lead_until = lease_until_;
      seen.epoch = leader_ >= 0 ? epoch_ : 0;
      seen.leader = leader_ >= 0 ? replicas_[static_cast<size_t>(leader_)].endpoint.Text() : "";
      seen.fresh = true;
      seen.view_read_at = now_;
      // As etcd held them when it took the lead.
      if (seen.leading && !replica.status.leading) seen.run_records = records_;
      ReplicaStatus taken = TakeStatus(std::move(seen), now_);
      auto change = DecideLeadChange(replica.status, taken, settings_, now_, "its lease ran out");
      replica.status = std::move(taken);
      if (!change) continue;
      DropEverything(r);
      if (replica.status.leading) {
        replica.core =
            std::make_unique<RendezvousCore>(change->settings, std::move(change->takeover));
      }
    }
  }

  // The replica stops serving: its core and connections go.
  void DropEverything(int r) {
    replicas_[static_cast<size_t>(r)].core.reset();
    for (auto& [id, conn] : conns_) {
      if (conn.replica != r || !conn.replica_open) continue;
      conn.replica_open = false;
      CloseAtAgent(id);
    }
  }

  // The replica closed `id`: its agent hears it when the path is up.
  void CloseAtAgent(uint64_t id) {
    const Conn conn = conns_.at(id);
    At(kHop, [this, id, conn] {
      if (!conns_.at(id).agent_open || !PathUp(conn.agent, conn.replica)) return;
      conns_.at(id).agent_open = false;
      Apply(conn.agent, agents_[static_cast<size_t>(conn.agent)]->machine.OnClosed(
                            conn.link, "closed by the replica", ChannelEnd::kPeerGone, now_));
    });
  }

  // A message reaches replica `conn.replica`.
  void ReplicaReceive(uint64_t id, const Message& message) {
    Conn& conn = conns_.at(id);
    Replica& replica = replicas_[static_cast<size_t>(conn.replica)];
    if (!conn.replica_open || replica.hung) return;
    if (!conn.greeted) {
      const HelloAnswer answer =
          AnswerHello(message, /*token=*/"", "replica" + std::to_string(conn.replica),
                      replica.core ? replica.core->settings() : settings_, replica.status, now_);
      ToAgent(id, answer.reply);
      if (answer.verdict == HelloAnswer::Verdict::kWelcome) {
        conn.greeted = true;
        return;
      }
      conn.replica_open = false;
      CloseAtAgent(id);
      return;
    }
    if (!replica.core) return;
    Carry(conn.replica, replica.core->Handle(MessageEvent{id, message}, now_));
  }

  void ToAgent(uint64_t id, Message message) {
    At(kHop, [this, id, message = std::move(message)] {
      const Conn& conn = conns_.at(id);
      if (!conn.agent_open || !PathUp(conn.agent, conn.replica)) return;
      Apply(conn.agent,
            agents_[static_cast<size_t>(conn.agent)]->machine.OnMessage(conn.link, message, now_));
    });
  }

  // What a leader's core asks for.
  void Carry(int r, const Actions& actions) {
    for (const Action& action : actions) {
      if (auto sent = SentMessage(action)) {
        const auto it = conns_.find(sent->first);
        if (it == conns_.end() || it->second.replica != r) continue;
        if (auto* a = std::get_if<AssignmentMessage>(&sent->second)) {
          // Formed: its members are fixed from this moment, heard or not.
          if (members_[a->assignment.generation].insert(it->second.agent).second) {
            Note("generation " + std::to_string(a->assignment.generation) + " has node" +
                 std::to_string(it->second.agent));
          }
          // The shell stamps the epoch it serves under (the core knows none).
          a->epoch = ServingEpoch(replicas_[static_cast<size_t>(r)].status);
        }
        if (PathUp(it->second.agent, r)) ToAgent(sent->first, sent->second);
      } else if (const auto* close = std::get_if<CloseAction>(&action)) {
        auto it = conns_.find(close->conn);
        if (it == conns_.end() || !it->second.replica_open) continue;
        it->second.replica_open = false;
        CloseAtAgent(close->conn);
      }
    }
    if (replicas_[static_cast<size_t>(r)].core) {
      for (const RunRecord& record : replicas_[static_cast<size_t>(r)].core->Records()) {
        records_[record.run_id] = record;
      }
    }
  }

  std::optional<uint64_t> ConnOf(int agent, LinkId link) const {
    const auto it = links_.find({agent, link});
    if (it == links_.end()) return std::nullopt;
    return it->second;
  }

  int ReplicaAt(const Endpoint& endpoint) const {
    for (int r = 0; r < static_cast<int>(replicas_.size()); ++r) {
      if (replicas_[static_cast<size_t>(r)].endpoint == endpoint) return r;
    }
    return -1;
  }

  // Carries out what agent `a`'s machine asks for.
  void Apply(int a, const ClientActions& actions) {
    AgentSim& agent = *agents_[static_cast<size_t>(a)];
    for (const ClientAction& action : actions) {
      if (const auto* connect = std::get_if<ConnectTo>(&action)) {
        const int r = ReplicaAt(connect->endpoint);
        REQUIRE(r >= 0);
        const LinkId link = connect->link;
        At(kHop, [this, a, r, link] {
          // Given up on since (CloseLink): no word.
          if (!pending_connects_.erase({a, link})) return;
          if (!PathUp(a, r)) return;  // silence: the attempt's own deadline ends it
          if (!replicas_[static_cast<size_t>(r)].alive) {
            Apply(a, agents_[static_cast<size_t>(a)]->machine.OnConnectFailed(
                         link, ConnectError::kRefused, "refused the connection", now_));
            return;
          }
          const uint64_t id = next_conn_++;
          Conn& conn = conns_[id];
          conn.agent = a;
          conn.link = link;
          conn.replica = r;
          links_[{a, link}] = id;
          Apply(a, agents_[static_cast<size_t>(a)]->machine.OnConnected(link, "10.1.0.9", now_));
        });
        pending_connects_.insert({a, link});
      } else if (const auto* send = std::get_if<SendTo>(&action)) {
        const auto id = ConnOf(a, send->link);
        if (!id || !conns_.at(*id).agent_open) continue;
        At(kHop, [this, id = *id, message = send->message] {
          Conn& conn = conns_.at(id);
          if (!PathUp(conn.agent, conn.replica)) return;
          if (!conn.replica_open) {
            // Closed there (its word may not have reached the agent while the
            // path was down): the reset comes back, after what was sent.
            CloseAtAgent(id);
            return;
          }
          ReplicaReceive(id, message);
        });
      } else if (const auto* close = std::get_if<CloseLink>(&action)) {
        pending_connects_.erase({a, close->link});
        const auto id = ConnOf(a, close->link);
        if (!id || !conns_.at(*id).agent_open) continue;
        conns_.at(*id).agent_open = false;
        At(kHop, [this, id = *id] {
          Conn& conn = conns_.at(id);
          if (!conn.replica_open || !PathUp(conn.agent, conn.replica)) return;
          conn.replica_open = false;
          RendezvousCore* core = replicas_[static_cast<size_t>(conn.replica)].core.get();
          if (core != nullptr && conn.greeted) {
            Carry(conn.replica, core->Handle(DisconnectEvent{id}, now_));
          }
        });
      } else if (const auto* arm = std::get_if<ArmTimer>(&action)) {
        const uint64_t seq = ++agent.timer_seq[arm->timer];
        const ClientTimer timer = arm->timer;
        events_.emplace(std::max(arm->at, now_), [this, a, timer, seq] {
          AgentSim& sim = *agents_[static_cast<size_t>(a)];
          if (sim.timer_seq[timer] != seq) return;
          Apply(a, sim.machine.OnTimer(timer, now_));
        });
      } else if (const auto* cancel = std::get_if<CancelTimer>(&action)) {
        ++agent.timer_seq[cancel->timer];
      } else if (const auto* assignment = std::get_if<DeliverAssignment>(&action)) {
        agent.running = assignment->assignment;
        Apply(a, agent.machine.SetCurrent(assignment->assignment));
      } else if (std::holds_alternative<DeliverWaiting>(action) ||
                 std::holds_alternative<DeliverRunEnded>(action)) {
        if (agent.running) Apply(a, agent.machine.SetCurrent(std::nullopt));
        agent.running.reset();
      } else if (std::holds_alternative<FenceWorkers>(action)) {
        Note("node" + std::to_string(a) + " fenced");
        ++agent.fences;
        if (agent.running) Apply(a, agent.machine.SetCurrent(std::nullopt));
        agent.running.reset();
      } else if (const auto* log = std::get_if<ClientLog>(&action)) {
        Note("node" + std::to_string(a) + " " + log->line);
      } else if (const auto* give_up = std::get_if<GiveUp>(&action)) {
        FAIL("agent " << a << " gave up: " << give_up->message);
      }
    }
  }

  void CheckNoWorkerBehindAGeneration() const {
    for (int a = 0; a < static_cast<int>(agents_.size()); ++a) {
      const auto& running = agents_[static_cast<size_t>(a)]->running;
      if (!running) continue;
      for (auto it = members_.upper_bound(running->generation); it != members_.end(); ++it) {
        INFO("node" << a << " runs generation " << running->generation << " while generation "
                    << it->first << " formed without it");
        REQUIRE(it->second.contains(a));
      }
    }
  }

  Settings settings_;
  static constexpr Time kStart{std::chrono::seconds(1'000)};
  Time now_ = kStart;
  std::vector<std::string> transcript_;
  std::multimap<Time, std::function<void()>> events_;  // equal times: in order queued
  std::vector<Replica> replicas_;
  std::vector<std::unique_ptr<AgentSim>> agents_;
  // The fake etcd.
  int leader_ = -1;
  uint64_t epoch_ = 0;
  Time lease_until_{};
  std::map<std::string, RunRecord, std::less<>> records_;
  // The network.
  uint64_t next_conn_ = 1;
  std::map<uint64_t, Conn> conns_;                    // by the replicas' ConnId
  std::map<std::pair<int, LinkId>, uint64_t> links_;  // (agent, link) -> ConnId
  std::set<std::pair<int, LinkId>> pending_connects_;
  // Every generation formed, with its members (agent indexes).
  std::map<uint64_t, std::set<int>> members_;
};

}  // namespace muster::rdzv::testing
