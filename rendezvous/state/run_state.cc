#include "rendezvous/state/run_state.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <utility>

#include "common/printable.h"
#include "rendezvous/protocol/message_codec.h"
#include "rendezvous/state/member_addresses.h"
#include "rendezvous/state/rank_assignment.h"
#include "rendezvous/state/refusal.h"

namespace muster::rdzv {
namespace {

// A step rate for the log: "12.5", "0.04"; "none" when unknown.
std::string RateText(std::optional<double> rate) {
  if (!rate) return "none";
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", *rate);
  return text;
}

template <typename D>
double SecondsOf(D d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

RunState::RunState(std::string run_id, const Join& first, const Settings& settings, Time now,
                   const Takeover& takeover)
    : run_id_(std::move(run_id)),
      settings_(settings),
      rebuild_hold_until_(takeover.rebuild_hold_until),
      min_nodes_(first.min_nodes),
      max_nodes_(first.max_nodes),
      max_restarts_(first.max_restarts),
      nodes_(settings),
      gathering_since_(now),
      round_opened_(now),
      stragglers_(StragglerRule{settings.straggler_fraction, settings.straggler_window}),
      goodput_(now) {
  if (const auto it = takeover.records.find(run_id_);
      it != takeover.records.end() && !it->second.ended) {
    const RunRecord& record = it->second;
    min_nodes_ = record.min_nodes;
    max_nodes_ = record.max_nodes;
    max_restarts_ = record.max_restarts;
    generation_floor_ = record.generation;
    if (!first.current) restart_count_ = record.restart_count;
  }
  // The first node to reach a fresh daemon already runs workers: the daemon
  // was restarted, so rebuild the run from the agents' reports. A new
  // leader rebuilds every run it meets before its hold is over, whoever
  // comes first: members cut off from it may still run workers until then.
  if (first.current || (rebuild_hold_until_ && now < *rebuild_hold_until_)) StartRebuild(now);
}

RunRecord RunState::Record() const {
  return RunRecord{.run_id = run_id_,
                   .generation = std::max(generation_, generation_floor_),
                   .restart_count = restart_count_,
                   .max_restarts = max_restarts_,
                   .min_nodes = min_nodes_,
                   .max_nodes = max_nodes_,
                   .ended = ended()};
}

const std::shared_ptr<const std::string>& RunState::AckFrame() {
  // Every ack of a generation is the same bytes: encode them once, not once
  // per heartbeat.
  if (!ack_frame_ || ack_frame_generation_ != generation_) {
    ack_frame_ = std::make_shared<const std::string>(Encode(HeartbeatAck{run_id_, generation_}));
    ack_frame_generation_ = generation_;
  }
  return ack_frame_;
}

void RunState::Log(Actions& out, bool warning, const std::string& line) const {
  // Node ids, hosts, run ids and messages come from agents: a newline in
  // one must not start a forged line of its own.
  out.push_back(LogAction{warning, EscapeControlCharacters(line + " run=" + run_id_)});
}

Actions RunState::RefuseUnknownNode(ConnId conn, std::string_view node_id) const {
  return Refusal(conn, ErrorCode::kUnknownNode,
                 "node '" + std::string(node_id) + "' is not part of run '" + run_id_ +
                     "' (declared dead?); join again",
                 Refused::kMayRetry);
}

bool RunState::IsCurrentMemberReport(const Node& node, uint64_t generation) const {
  return generation == generation_ && phase_ == Phase::kRunning && node.member;
}

Actions RunState::RefuseStaleGeneration(ConnId conn, uint64_t generation) const {
  return Refusal(conn, ErrorCode::kStaleGeneration,
                 "generation " + std::to_string(generation) + " is not current (" +
                     std::to_string(generation_) + ")",
                 Refused::kMayRetry);
}

void RunState::SendAssignment(const Node& node, Actions& out) const {
  if (node.conn == 0) return;
  Assignment a;
  a.run_id = run_id_;
  a.generation = generation_;
  a.group_rank = node.group_rank;
  a.local_world_size = node.local_world_size;
  a.global_rank_offset = node.global_rank_offset;
  a.restart_count = restart_count_;
  a.max_restarts = max_restarts_;
  a.group_world_size = summary_.group_world_size;
  a.world_size = summary_.world_size;
  a.master_addr = summary_.master_addr;
  a.master_port = summary_.master_port;
  AssignmentMessage message{a};
  // Only the master hosts the store: 10,000 agents need not each get 10,000
  // addresses.
  if (node.group_rank == 0) message.member_addrs = summary_.member_addrs;
  out.push_back(SendAction{node.conn, std::move(message)});
}

void RunState::SummarizeGeneration() {
  // Once per generation, so that sending N assignments costs O(N), not O(N^2).
  summary_ = GenerationSummary{};
  // A new generation's workers have not succeeded yet.
  succeeded_members_ = 0;
  std::vector<std::pair<std::string, std::string>> member_addresses;  // seen, advertised
  for (auto& [id, node] : nodes_) {
    node.succeeded = false;
    // Steps count again from the new generation's workers.
    node.step_rate.Reset();
    if (!node.member) continue;
    ++summary_.group_world_size;
    summary_.world_size += node.local_world_size;
    if (node.group_rank == 0) {
      summary_.master_addr = node.store_addr;
      summary_.master_port = node.store_port;
    }
    member_addresses.emplace_back(node.peer_addr, node.store_addr);
  }
  summary_.member_addrs = MemberAddressList(member_addresses);
}

void RunState::OnDaemonStalled(Time now) {
  // The daemon itself did not read its sockets for a while (overloaded, or
  // stopped): heartbeats may be sitting unread, so silence proves nothing yet.
  nodes_.ForgiveStall(now);
}

Actions RunState::OnJoin(ConnId conn, const Join& join, const std::string& peer_addr, Time now) {
  if (phase_ == Phase::kEnded) {
    return {SendAction{conn, RunEnded{run_id_, end_succeeded_, end_message_}}};
  }
  if (join.min_nodes != min_nodes_ || join.max_nodes != max_nodes_) {
    return Refusal(conn, ErrorCode::kBadRequest,
                   "--nnodes " + std::to_string(join.min_nodes) + ":" +
                       std::to_string(join.max_nodes) + " differs from run '" + run_id_ + "' (" +
                       std::to_string(min_nodes_) + ":" + std::to_string(max_nodes_) + ")",
                   Refused::kFatal);
  }
  // One restart budget for the whole job: a node that counts another would
  // restart when the run has ended, or end it while others would restart.
  if (join.max_restarts != max_restarts_) {
    return Refusal(conn, ErrorCode::kBadRequest,
                   "--max-restarts " + std::to_string(join.max_restarts) + " differs from run '" +
                       run_id_ + "' (" + std::to_string(max_restarts_) + ")",
                   Refused::kFatal);
  }
  Actions out;
  if (Node* node = nodes_.Find(join.node_id)) {
    // The same agent on a new connection (it reconnected).
    if (node->conn != 0 && node->conn != conn) out.push_back(CloseAction{node->conn});
    nodes_.Connected(*node, conn, now);
    node->store_addr = join.store_addr;
    node->store_port = join.store_port;
    node->peer_addr = peer_addr;
    if (join.current) node->reported = join.current;
    Log(out, false, "event=rejoin node=" + join.node_id + " host=" + join.host);
    if (phase_ == Phase::kRebuilding) {
      TryFinishRebuild(now, false, out);
      if (phase_ == Phase::kRebuilding && !join.current) {
        out.push_back(SendAction{conn, Waiting{run_id_, "rebuilding"}});
      }
    } else if (drain_ && drain_->running.count(node->node_id)) {
      // Draining: it must stop (or has stopped) its workers, not restart them.
      out.push_back(SendAction{conn, Waiting{run_id_, "generation " + std::to_string(generation_) +
                                                          " is ending: " + drain_->why}});
      if (!join.current) DrainedNode(node->node_id, now, out);
    } else if (node->member && phase_ == Phase::kRunning && !drain_) {
      SendAssignment(*node, out);
    } else {
      out.push_back(SendAction{conn, Waiting{run_id_, "waiting for the next round"}});
    }
    return out;
  }

  history_.Returned(join.node_id);
  Node& node = nodes_.Add(join.node_id);
  node.host = join.host;
  node.local_world_size = join.local_world_size;
  node.store_addr = join.store_addr;
  node.store_port = join.store_port;
  node.peer_addr = peer_addr;
  node.join_seq = next_join_seq_++;
  node.reported = join.current;
  // Never a generation number this node was handed before (the daemon
  // restarted or another replica leads, and no record says how far it got).
  generation_floor_ = std::max(generation_floor_, join.last_generation);
  nodes_.Connected(node, conn, now);
  Log(out, false,
      "event=join node=" + join.node_id + " host=" + join.host + " local_world_size=" +
          std::to_string(join.local_world_size) + " nodes=" + std::to_string(nodes_.size()));

  const int count = static_cast<int>(nodes_.size());
  if (join.current && generation_ == 0 &&
      (phase_ == Phase::kGathering || phase_ == Phase::kLastCall)) {
    // A fresh daemon met a node without workers first; this one runs workers
    // of a generation the daemon has forgotten: rebuild instead of gathering.
    StartRebuild(now);
  }
  switch (phase_) {
    case Phase::kRebuilding: {
      TryFinishRebuild(now, false, out);
      // A node that reported running workers keeps them running while the
      // run is rebuilt: Waiting would tell it to stop them.
      if (phase_ == Phase::kRebuilding && !join.current) {
        out.push_back(SendAction{conn, Waiting{run_id_, "rebuilding after a daemon restart"}});
      }
      return out;
    }
    case Phase::kGathering:
    case Phase::kLastCall: {
      if (count >= max_nodes_) {
        StartGeneration(now, "max nodes joined", out);
        return out;
      }
      if (count >= min_nodes_ && phase_ == Phase::kGathering) {
        phase_ = Phase::kLastCall;
        round_deadline_ = now + settings_.last_call_timeout;
      }
      out.push_back(SendAction{
          conn, Waiting{run_id_, std::to_string(count) + " of " + std::to_string(min_nodes_) +
                                     ".." + std::to_string(max_nodes_) + " nodes joined"}});
      return out;
    }
    case Phase::kRunning: {
      if (count > max_nodes_) {
        out.push_back(
            SendAction{conn, Waiting{run_id_, "the run is full (" + std::to_string(max_nodes_) +
                                                  " nodes); standing by"}});
        return out;
      }
      // Admit newcomers together at the next round, after a last call window.
      if (!round_deadline_) round_deadline_ = now + settings_.last_call_timeout;
      out.push_back(SendAction{conn, Waiting{run_id_, "admitted at the next round"}});
      return out;
    }
    case Phase::kEnded:
      break;
  }
  return out;
}

void RunState::OnHeartbeat(ConnId conn, const HeartbeatView& hb, Time now, Actions& out) {
  Node* node = nodes_.NodeOn(conn, hb.node_id);
  if (node == nullptr) {
    std::ranges::move(RefuseUnknownNode(conn, hb.node_id), std::back_inserter(out));
    return;
  }
  node->last_seen = now;
  ++counters_.heartbeats;
  node->step_rate.Record(hb.generation, hb.step, now);
  steps_reported_ = steps_reported_ || hb.step != 0;
  if (node->member && hb.generation == generation_) NoteProgress(*node, hb, now);
  if (drain_) {
    // Draining: a heartbeat for another generation says its workers are gone.
    if (hb.generation != generation_ && drain_->running.count(node->node_id)) {
      DrainedNode(node->node_id, now, out);
      return;
    }
  } else if (phase_ == Phase::kRunning && node->member && hb.generation != generation_) {
    // It missed (or has not yet applied) the current assignment: repeat it.
    SendAssignment(*node, out);
    return;
  }
  // Acks only need to reach the agent well within its fence_timeout: one per
  // third of it halves the daemon's sends at the default settings.
  if (now - node->last_ack < settings_.fence_timeout / 3) return;
  node->last_ack = now;
  out.push_back(SendFrameAction{conn, AckFrame()});
}

Actions RunState::OnWorkerFailed(ConnId conn, const WorkerFailed& failed, Time now) {
  Node* node = nodes_.NodeOn(conn, failed.node_id);
  if (node == nullptr) return RefuseUnknownNode(conn, failed.node_id);
  node->last_seen = now;
  if (!IsCurrentMemberReport(*node, failed.generation)) {
    return RefuseStaleGeneration(conn, failed.generation);
  }
  Actions out;
  if (drain_) {
    // The generation was ending anyway: this failure is part of its end,
    // not another restart.
    Log(out, false,
        "event=worker_failed node=" + node->node_id + " gen=" + std::to_string(generation_) +
            " exit_code=" + std::to_string(failed.exit_code) + " while draining");
    NoteEvent(now, "worker_failed", node->node_id,
              "exit code " + std::to_string(failed.exit_code) + " while generation " +
                  std::to_string(generation_) + " was ending");
    DrainedNode(node->node_id, now, out);
    return out;
  }
  ++restart_count_;
  const std::string what = "worker failure on node " + node->node_id + " (host " + node->host +
                           ", exit code " + std::to_string(failed.exit_code) + ")";
  Log(out, true,
      "event=worker_failed node=" + node->node_id + " gen=" + std::to_string(generation_) +
          " exit_code=" + std::to_string(failed.exit_code) + " failures=" +
          std::to_string(restart_count_) + " max_restarts=" + std::to_string(max_restarts_));
  NoteEvent(now, "worker_failed", node->node_id,
            "exit code " + std::to_string(failed.exit_code) + " (restart " +
                std::to_string(restart_count_) + " of " + std::to_string(max_restarts_) + ")");
  round_opened_ = now;
  if (restart_count_ > max_restarts_) {
    EndRun(false,
           what + (failed.message.empty() ? "" : ": " + failed.message) + "; no restarts left (" +
               std::to_string(max_restarts_) + " of " + std::to_string(max_restarts_) + " used)",
           now, out);
    return out;
  }
  // An agent reports a failure once its workers are gone: nothing to drain there.
  next_cause_ = GenerationCause{std::string(GenerationCause::kWorkerFailed), node->node_id,
                                "exit code " + std::to_string(failed.exit_code)};
  NextGeneration(now, what, out, node->node_id);
  return out;
}

Actions RunState::OnWorkersSucceeded(ConnId conn, const WorkersSucceeded& done, Time now) {
  Node* node = nodes_.NodeOn(conn, done.node_id);
  if (node == nullptr) return RefuseUnknownNode(conn, done.node_id);
  node->last_seen = now;
  if (phase_ == Phase::kEnded) {
    // A report after the run ended (a repeat of the one that ended it): the
    // outcome is settled; only the reporter hears it again.
    return {SendAction{conn, RunEnded{run_id_, end_succeeded_, end_message_}}};
  }
  if (!IsCurrentMemberReport(*node, done.generation)) {
    return RefuseStaleGeneration(conn, done.generation);
  }
  if (!node->succeeded) {
    node->succeeded = true;
    ++succeeded_members_;
  }
  Actions out;
  if (succeeded_members_ >= summary_.group_world_size) {
    EndRun(true, "every worker succeeded", now, out);
  } else if (drain_) {
    DrainedNode(node->node_id, now, out);
  }
  return out;
}

Actions RunState::OnLeave(ConnId conn, const Leave& leave, Time now) {
  Node* node = nodes_.NodeOn(conn, leave.node_id);
  if (node == nullptr) return {};
  Actions out;
  NodeGone(leave.node_id, now, "left", out);
  return out;
}

Actions RunState::OnDisconnect(ConnId conn, Time now) {
  Node* node = nodes_.FindByConn(conn);
  if (node == nullptr) return {};
  nodes_.Disconnected(*node, now);
  Actions out;
  Log(out, false, "event=disconnect node=" + node->node_id);
  return out;
}

void RunState::NodeGone(const std::string& node_id, Time now, const std::string& why,
                        Actions& out) {
  const Node* gone = nodes_.Find(node_id);
  if (gone == nullptr) return;
  const bool was_member = gone->member;
  const std::string host = gone->host;
  const int first_rank = gone->global_rank_offset;
  const int last_rank = gone->global_rank_offset + gone->local_world_size - 1;
  NoteDeparted(*gone, why, now);
  nodes_.Erase(node_id);
  ++counters_.dead_nodes;
  Log(out, true,
      "event=node_dead node=" + node_id + " host=" + host + " why=" + why +
          " gen=" + std::to_string(generation_) + " member=" + (was_member ? "1" : "0"));
  if (phase_ == Phase::kEnded) return;
  const int alive = static_cast<int>(nodes_.size());
  if (drain_) drain_->running.erase(node_id);
  if (phase_ == Phase::kRunning && was_member) {
    // What the survivors read: whose agent, on which host, with which ranks.
    const std::string whose = "the agent on host " + host + " (node " + node_id + ", ranks " +
                              std::to_string(first_rank) + ".." + std::to_string(last_rank) + ") " +
                              (why == "left"     ? "left the job"
                               : why == "silent" ? "went silent"
                                                 : why);
    round_opened_ = now;
    if (alive >= min_nodes_) {
      next_cause_ = GenerationCause{
          std::string(why == "left" ? GenerationCause::kNodeLeft : GenerationCause::kNodeLost),
          node_id, history_.departed.back().why};
      NextGeneration(now, whose, out);
      return;
    }
    // Too few to go on: survivors stop their workers and wait for replacements.
    drain_.reset();
    phase_ = Phase::kGathering;
    gathering_since_ = now;
    round_deadline_.reset();
    const std::string reason = whose + "; " + std::to_string(alive) +
                               " nodes left, below --nnodes MIN " + std::to_string(min_nodes_) +
                               "; waiting up to join_timeout " +
                               SecondsText(settings_.join_timeout) + "s for replacements";
    Log(out, true, "event=below_min nodes=" + std::to_string(alive));
    NoteEvent(now, "below_min", "",
              std::to_string(alive) + " nodes left, below --nnodes MIN " +
                  std::to_string(min_nodes_) + "; waiting for replacements");
    WaitForReplacements(reason, out);
    return;
  }
  if (phase_ == Phase::kLastCall && alive < min_nodes_) {
    phase_ = Phase::kGathering;
    round_deadline_.reset();
  }
  FinishDrainIfDone(now, out);
}

void RunState::NextGeneration(Time now, const std::string& why, Actions& out,
                              std::string_view stopped) {
  if (drain_) {
    drain_->why = why;  // already ending; the latest cause is reported
    FinishDrainIfDone(now, out);
    return;
  }
  std::set<std::string> running;
  for (const auto& [id, node] : nodes_) {
    if (node.member && !node.succeeded && id != stopped) running.insert(id);
  }
  if (running.empty()) {
    StartGeneration(now, why, out);
    return;
  }
  Log(out, false,
      "event=draining gen=" + std::to_string(generation_) +
          " nodes=" + std::to_string(running.size()) + " why=\"" + why + "\"");
  const std::string reason = "generation " + std::to_string(generation_) + " is ending: " + why +
                             "; this node stops its workers and rejoins";
  for (const std::string& id : running) {
    const Node* node = nodes_.Find(id);
    if (node->conn) out.push_back(SendAction{node->conn, Waiting{run_id_, reason}});
  }
  drain_ = Drain{why, now + settings_.drain_timeout, std::move(running)};
}

void RunState::DrainedNode(const std::string& node_id, Time now, Actions& out) {
  if (!drain_) return;
  drain_->running.erase(node_id);
  FinishDrainIfDone(now, out);
}

void RunState::FinishDrainIfDone(Time now, Actions& out) {
  if (!drain_ || !drain_->running.empty() || phase_ != Phase::kRunning) return;
  const std::string why = std::move(drain_->why);
  drain_.reset();
  StartGeneration(now, why, out);
}

void RunState::WaitForReplacements(const std::string& reason, Actions& out) {
  nodes_.ClearMembership();
  for (auto& [id, node] : nodes_) {
    if (node.conn) out.push_back(SendAction{node.conn, Waiting{run_id_, reason}});
  }
}

void RunState::StartGeneration(Time now, const std::string& why, Actions& out) {
  std::vector<Node*> candidates;
  std::vector<RankCandidate> ranking;
  for (auto& [id, node] : nodes_) {
    candidates.push_back(&node);
    ranking.push_back(
        RankCandidate{node.member, node.group_rank, node.join_seq, node.local_world_size});
  }
  const RankAssignment ranks = AssignRanks(ranking, max_nodes_);
  nodes_.ClearMembership();
  // A node may report a newer generation than the one a restarted daemon
  // resumed (it saw a round the others missed): never hand that number out again.
  for (const Node* node : candidates) {
    if (node->reported) generation_ = std::max(generation_, node->reported->generation);
  }
  generation_ = std::max(generation_, generation_floor_);
  ++generation_;
  ++counters_.generations;
  counters_.round_seconds_total += SecondsOf(now - round_opened_);
  drain_.reset();
  // A round that gathered nodes forms because they joined, whatever ended
  // the generation before it.
  GenerationCause cause = std::exchange(next_cause_, {});
  if (phase_ == Phase::kGathering || phase_ == Phase::kLastCall || cause.reason.empty()) {
    cause = GenerationCause{std::string(GenerationCause::kJoined), "", why};
  }
  for (const RankedMember& ranked : ranks.members) {
    Node& node = *candidates[ranked.candidate];
    node.member = true;
    node.group_rank = ranked.group_rank;
    node.global_rank_offset = ranked.global_rank_offset;
    node.reported.reset();
  }
  phase_ = Phase::kRunning;
  round_deadline_.reset();
  Log(out, false,
      "event=generation gen=" + std::to_string(generation_) +
          " nodes=" + std::to_string(ranks.members.size()) +
          " world_size=" + std::to_string(ranks.world_size) + " master=" +
          (ranks.members.empty() ? "" : candidates[ranks.members.front().candidate]->node_id) +
          " failure_restarts=" + std::to_string(restart_count_) + "/" +
          std::to_string(max_restarts_) + " why=\"" + why + "\"");
  SummarizeGeneration();
  NoteGeneration(now, std::move(cause));
  RestartProgress(now);
  for (const RankedMember& ranked : ranks.members) {
    SendAssignment(*candidates[ranked.candidate], out);
  }
  for (auto& [id, node] : nodes_) {
    if (!node.member && node.conn) {
      out.push_back(SendAction{node.conn, Waiting{run_id_, "the run is full; standing by"}});
    }
  }
  round_opened_ = now;
}

void RunState::EndRun(bool succeeded, const std::string& message, Time now, Actions& out) {
  phase_ = Phase::kEnded;
  ended_at_ = now;
  end_succeeded_ = succeeded;
  end_message_ = message;
  round_deadline_.reset();
  Log(out, !succeeded,
      std::string("event=run_ended result=") + (succeeded ? "succeeded" : "failed") +
          " gen=" + std::to_string(generation_) + " message=\"" + message + "\"");
  NoteEvent(now, "run_ended", "", (succeeded ? "succeeded: " : "failed: ") + message);
  FinishGoodput(succeeded, now, out);
  for (auto& [id, node] : nodes_) {
    if (node.conn) out.push_back(SendAction{node.conn, RunEnded{run_id_, succeeded, message}});
  }
  return;
}

void RunState::CheckStragglers(Time now, Actions& out) {
  member_rates_.clear();
  for (const auto& [id, node] : nodes_) {
    // A member whose workers all succeeded steps no more: done, not slow.
    if (node.member && !node.succeeded) {
      member_rates_.push_back({id, node.host, node.step_rate.PerSecond()});
    }
  }
  for (const StragglerChange& change : stragglers_.Evaluate(member_rates_, now)) {
    const bool flagged = change.kind == StragglerChange::Kind::kFlagged;
    out.push_back(LogAction{
        flagged, EscapeControlCharacters(
                     std::string("event=") + (flagged ? "straggler" : "straggler_cleared") +
                     " run=" + run_id_ + " node=" + change.node_id + " host=" + change.host +
                     " rate=" + RateText(change.rate) + " median=" + RateText(change.median) +
                     " gen=" + std::to_string(generation_))});
    NoteEvent(now, flagged ? "straggler" : "straggler_cleared", change.node_id,
              "host " + change.host + ": " + RateText(change.rate) +
                  " steps/s against a median of " + RateText(change.median));
  }
}

Actions RunState::OnTick(Time now) {
  Actions out;
  if (phase_ == Phase::kEnded) return out;
  const std::vector<NodeTable::DeadNode> dead = nodes_.FindDead(now);
  // Every half-open socket is closed before the first NodeGone() sends anything.
  for (const NodeTable::DeadNode& node : dead) {
    if (node.close_conn != 0) out.push_back(CloseAction{node.close_conn});
  }
  for (const NodeTable::DeadNode& node : dead) {
    NodeGone(node.node_id, now, node.why, out);
  }
  if (phase_ == Phase::kEnded) return out;
  if (drain_ && now >= drain_->deadline) {
    std::string late;
    for (const std::string& id : drain_->running) late += (late.empty() ? "" : ",") + id;
    Log(out, true,
        "event=drain_timeout gen=" + std::to_string(generation_) + " nodes=" + late +
            " (they did not report their workers stopped)");
    NoteEvent(now, "drain_timeout", "",
              "generation " + std::to_string(generation_) + ": " + late +
                  " did not report their workers stopped");
    drain_->running.clear();
    FinishDrainIfDone(now, out);
  }
  if (steps_reported_ && now >= next_straggler_check_) {
    next_straggler_check_ = now + kStragglerCheckInterval;
    CheckStragglers(now, out);
    CheckComputeStragglers(now, out);
    MeterGoodput(now);
  }
  if (round_deadline_ && now >= *round_deadline_) {
    // Cleared first: finishing a rebuild may open an admission window of its own.
    round_deadline_.reset();
    if (phase_ == Phase::kLastCall) {
      StartGeneration(now, "last call ended", out);
    } else if (phase_ == Phase::kRunning &&
               std::any_of(nodes_.begin(), nodes_.end(),
                           [](const auto& entry) { return !entry.second.member; })) {
      // Only if a newcomer is still there: a new generation restarts every
      // worker, and the one it was opened for may have died meanwhile.
      next_cause_ =
          GenerationCause{std::string(GenerationCause::kAdmitted), "", "new nodes joined"};
      NextGeneration(now, "admitting new nodes", out);
    } else if (phase_ == Phase::kRebuilding) {
      TryFinishRebuild(now, true, out);
    }
  }
  if ((phase_ == Phase::kGathering || phase_ == Phase::kRebuilding) &&
      now - gathering_since_ >= settings_.join_timeout) {
    EndRun(false,
           "only " + std::to_string(nodes_.size()) + " of --nnodes MIN " +
               std::to_string(min_nodes_) + " nodes within join_timeout " +
               SecondsText(settings_.join_timeout) + "s",
           now, out);
  }
  return out;
}

}  // namespace muster::rdzv
