#include "rendezvous/state/run_state.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "rendezvous/protocol/message_codec.h"

namespace muster::rdzv {
namespace {

// "600", "0.5": seconds as written in --rdzv-conf, for messages users read.
std::string SecondsText(Duration d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.10g", static_cast<double>(d.count()) / 1000.0);
  return text;
}

template <typename D>
double SecondsOf(D d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

const char* RunState::PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kGathering:
      return "gathering";
    case Phase::kLastCall:
      return "last_call";
    case Phase::kRunning:
      return "running";
    case Phase::kRebuilding:
      return "rebuilding";
    case Phase::kEnded:
      return "ended";
  }
  return "unknown";
}

RunState::RunState(std::string run_id, const Join& first, const Settings& settings, Time now)
    : run_id_(std::move(run_id)),
      settings_(settings),
      min_nodes_(first.min_nodes),
      max_nodes_(first.max_nodes),
      max_restarts_(first.max_restarts),
      gathering_since_(now),
      round_opened_(now) {
  if (first.current) {
    // The first node to reach a fresh daemon already runs workers: the daemon
    // was restarted, so rebuild the run from the agents' reports.
    phase_ = Phase::kRebuilding;
    round_deadline_ = now + settings_.close_timeout;
  }
}

RunState::Node* RunState::FindNode(std::string_view node_id) {
  auto it = nodes_.find(node_id);
  return it == nodes_.end() ? nullptr : &it->second;
}

RunState::Node* RunState::FindByConn(ConnId conn) {
  auto it = conn_node_.find(conn);
  return it == conn_node_.end() ? nullptr : FindNode(it->second);
}

void RunState::BindConn(Node& node, ConnId conn) {
  if (node.conn == conn) return;
  if (node.conn != 0) {
    // Only if it is still this node's: a client that joined a second node id
    // on the same connection has rebound it.
    auto it = conn_node_.find(node.conn);
    if (it != conn_node_.end() && it->second == node.node_id) conn_node_.erase(it);
  }
  node.conn = conn;
  if (conn != 0) conn_node_[conn] = node.node_id;
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

size_t RunState::member_count() const {
  return static_cast<size_t>(std::count_if(nodes_.begin(), nodes_.end(),
                                           [](const auto& entry) { return entry.second.member; }));
}

void RunState::Log(Actions& out, bool warning, const std::string& line) const {
  out.push_back(LogAction{warning, line + " run=" + run_id_});
}

Actions RunState::Refuse(ConnId conn, ErrorCode code, const std::string& message, bool fatal) {
  Actions out;
  out.push_back(SendAction{conn, Error{code, message, fatal}});
  if (fatal) out.push_back(CloseAction{conn});
  return out;
}

RunState::Node* RunState::NodeOn(ConnId conn, std::string_view node_id) {
  Node* node = FindNode(node_id);
  return node != nullptr && node->conn == conn ? node : nullptr;
}

Actions RunState::RefuseUnknownNode(ConnId conn, std::string_view node_id) {
  return Refuse(conn, ErrorCode::kUnknownNode,
                "node '" + std::string(node_id) + "' is not part of run '" + run_id_ +
                    "' (declared dead?); join again",
                false);
}

bool RunState::IsCurrentMemberReport(const Node& node, uint64_t generation) const {
  return generation == generation_ && phase_ == Phase::kRunning && node.member;
}

Actions RunState::RefuseStaleGeneration(ConnId conn, uint64_t generation) {
  return Refuse(conn, ErrorCode::kStaleGeneration,
                "generation " + std::to_string(generation) + " is not current (" +
                    std::to_string(generation_) + ")",
                false);
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
  out.push_back(SendAction{node.conn, AssignmentMessage{a}});
}

void RunState::SummarizeGeneration() {
  // Once per generation, so that sending N assignments costs O(N), not O(N^2).
  summary_ = GenerationSummary{};
  // A new generation's workers have not succeeded yet.
  succeeded_members_ = 0;
  for (auto& [id, node] : nodes_) {
    node.succeeded = false;
    if (!node.member) continue;
    ++summary_.group_world_size;
    summary_.world_size += node.local_world_size;
    if (node.group_rank == 0) {
      summary_.master_addr = node.store_addr;
      summary_.master_port = node.store_port;
    }
  }
}

void RunState::OnDaemonStalled(Time now) {
  // The daemon itself did not read its sockets for a while (overloaded, or
  // stopped): heartbeats may be sitting unread, so silence proves nothing yet.
  for (auto& [id, node] : nodes_) {
    if (node.conn != 0) node.last_seen = std::max(node.last_seen, now);
  }
}

Actions RunState::OnJoin(ConnId conn, const Join& join, Time now) {
  if (phase_ == Phase::kEnded) {
    return {SendAction{conn, RunEnded{run_id_, end_succeeded_, end_message_}}};
  }
  if (join.min_nodes != min_nodes_ || join.max_nodes != max_nodes_) {
    return Refuse(conn, ErrorCode::kBadRequest,
                  "--nnodes " + std::to_string(join.min_nodes) + ":" +
                      std::to_string(join.max_nodes) + " differs from run '" + run_id_ + "' (" +
                      std::to_string(min_nodes_) + ":" + std::to_string(max_nodes_) + ")",
                  true);
  }
  Actions out;
  if (Node* node = FindNode(join.node_id)) {
    // The same agent on a new connection (it reconnected).
    if (node->conn != 0 && node->conn != conn) out.push_back(CloseAction{node->conn});
    BindConn(*node, conn);
    node->disconnected_at.reset();
    node->last_seen = now;
    NoteDeadline(*node);
    node->store_addr = join.store_addr;
    node->store_port = join.store_port;
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

  Node& node = nodes_.emplace(join.node_id, Node{}).first->second;
  node.node_id = join.node_id;
  node.host = join.host;
  BindConn(node, conn);
  node.last_seen = now;
  node.local_world_size = join.local_world_size;
  node.store_addr = join.store_addr;
  node.store_port = join.store_port;
  node.join_seq = next_join_seq_++;
  node.reported = join.current;
  NoteDeadline(node);
  Log(out, false,
      "event=join node=" + join.node_id + " host=" + join.host + " local_world_size=" +
          std::to_string(join.local_world_size) + " nodes=" + std::to_string(nodes_.size()));

  const int count = static_cast<int>(nodes_.size());
  if (join.current && generation_ == 0 &&
      (phase_ == Phase::kGathering || phase_ == Phase::kLastCall)) {
    // A fresh daemon met a node without workers first; this one runs workers
    // of a generation the daemon has forgotten: rebuild instead of gathering.
    phase_ = Phase::kRebuilding;
    round_deadline_ = now + settings_.close_timeout;
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
  Node* node = NodeOn(conn, hb.node_id);
  if (node == nullptr) {
    std::ranges::move(RefuseUnknownNode(conn, hb.node_id), std::back_inserter(out));
    return;
  }
  node->last_seen = now;
  ++counters_.heartbeats;
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
  Node* node = NodeOn(conn, failed.node_id);
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
    DrainedNode(node->node_id, now, out);
    return out;
  }
  ++restart_count_;
  const std::string what = "worker failure on node " + node->node_id + " (host " + node->host +
                           ", exit code " + std::to_string(failed.exit_code) + ")";
  Log(out, true,
      "event=worker_failed node=" + node->node_id + " gen=" + std::to_string(generation_) +
          " exit_code=" + std::to_string(failed.exit_code) +
          " restart_count=" + std::to_string(restart_count_));
  round_opened_ = now;
  if (restart_count_ > max_restarts_) {
    EndRun(false,
           what + (failed.message.empty() ? "" : ": " + failed.message) +
               "; the job has used all " + std::to_string(max_restarts_) + " restarts",
           now, out);
    return out;
  }
  // An agent reports a failure once its workers are gone: nothing to drain there.
  NextGeneration(now, what, out, node->node_id);
  return out;
}

Actions RunState::OnWorkersSucceeded(ConnId conn, const WorkersSucceeded& done, Time now) {
  Node* node = NodeOn(conn, done.node_id);
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
  Node* node = NodeOn(conn, leave.node_id);
  if (node == nullptr) return {};
  Actions out;
  NodeGone(leave.node_id, now, "left", out);
  return out;
}

Actions RunState::OnDisconnect(ConnId conn, Time now) {
  Node* node = FindByConn(conn);
  if (node == nullptr) return {};
  BindConn(*node, 0);
  node->disconnected_at = now;
  NoteDeadline(*node);
  Actions out;
  Log(out, false, "event=disconnect node=" + node->node_id);
  return out;
}

void RunState::NodeGone(const std::string& node_id, Time now, const std::string& why,
                        Actions& out) {
  auto it = nodes_.find(node_id);
  if (it == nodes_.end()) return;
  const bool was_member = it->second.member;
  const std::string host = it->second.host;
  BindConn(it->second, 0);
  nodes_.erase(it);
  ++counters_.dead_nodes;
  Log(out, true,
      "event=node_dead node=" + node_id + " host=" + host + " why=" + why +
          " gen=" + std::to_string(generation_) + " member=" + (was_member ? "1" : "0"));
  if (phase_ == Phase::kEnded) return;
  const int alive = static_cast<int>(nodes_.size());
  if (drain_) drain_->running.erase(node_id);
  if (phase_ == Phase::kRunning && was_member) {
    round_opened_ = now;
    if (alive >= min_nodes_) {
      NextGeneration(now, "node " + node_id + " " + why, out);
      return;
    }
    // Too few to go on: survivors stop their workers and wait for replacements.
    drain_.reset();
    phase_ = Phase::kGathering;
    gathering_since_ = now;
    round_deadline_.reset();
    const std::string reason = "node " + node_id + " " + why + "; " + std::to_string(alive) +
                               " nodes left, below --nnodes MIN " + std::to_string(min_nodes_) +
                               "; waiting up to join_timeout " +
                               SecondsText(settings_.join_timeout) + "s for replacements";
    Log(out, true, "event=below_min nodes=" + std::to_string(alive));
    for (auto& [id, node] : nodes_) {
      node.member = false;
      node.group_rank = -1;
      if (node.conn) out.push_back(SendAction{node.conn, Waiting{run_id_, reason}});
    }
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
  const std::string reason =
      "generation " + std::to_string(generation_) + " is ending: " + why + "; stop its workers";
  for (const std::string& id : running) {
    const Node& node = nodes_.at(id);
    if (node.conn) out.push_back(SendAction{node.conn, Waiting{run_id_, reason}});
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

std::vector<RunState::Node*> RunState::OrderedForNextGeneration() {
  std::vector<Node*> previous, newcomers;
  for (auto& [id, node] : nodes_) (node.member ? previous : newcomers).push_back(&node);
  std::sort(previous.begin(), previous.end(),
            [](const Node* a, const Node* b) { return a->group_rank < b->group_rank; });
  std::sort(newcomers.begin(), newcomers.end(),
            [](const Node* a, const Node* b) { return a->join_seq < b->join_seq; });
  previous.insert(previous.end(), newcomers.begin(), newcomers.end());
  return previous;
}

void RunState::StartGeneration(Time now, const std::string& why, Actions& out) {
  std::vector<Node*> ordered = OrderedForNextGeneration();
  if (static_cast<int>(ordered.size()) > max_nodes_) ordered.resize(max_nodes_);
  for (auto& [id, node] : nodes_) {
    node.member = false;
    node.group_rank = -1;
  }
  // A node may report a newer generation than the one a restarted daemon
  // resumed (it saw a round the others missed): never hand that number out again.
  for (const auto& [id, node] : nodes_) {
    if (node.reported) generation_ = std::max(generation_, node.reported->generation);
  }
  ++generation_;
  ++counters_.generations;
  counters_.round_seconds_total += SecondsOf(now - round_opened_);
  int offset = 0;
  drain_.reset();
  for (size_t i = 0; i < ordered.size(); ++i) {
    ordered[i]->member = true;
    ordered[i]->group_rank = static_cast<int>(i);
    ordered[i]->global_rank_offset = offset;
    ordered[i]->reported.reset();
    offset += ordered[i]->local_world_size;
  }
  phase_ = Phase::kRunning;
  round_deadline_.reset();
  Log(out, false,
      "event=generation gen=" + std::to_string(generation_) +
          " nodes=" + std::to_string(ordered.size()) + " world_size=" + std::to_string(offset) +
          " master=" + (ordered.empty() ? "" : ordered[0]->node_id) +
          " restart_count=" + std::to_string(restart_count_) + " why=\"" + why + "\"");
  SummarizeGeneration();
  for (Node* node : ordered) SendAssignment(*node, out);
  for (auto& [id, node] : nodes_) {
    if (!node.member && node.conn) {
      out.push_back(SendAction{node.conn, Waiting{run_id_, "the run is full; standing by"}});
    }
  }
  round_opened_ = now;
  return;
}

void RunState::TryFinishRebuild(Time now, bool deadline_passed, Actions& out) {
  uint64_t latest = 0;
  for (const auto& [id, node] : nodes_) {
    if (node.reported) latest = std::max(latest, node.reported->generation);
  }
  std::vector<Node*> reporters;
  for (auto& [id, node] : nodes_) {
    if (node.reported && node.reported->generation == latest) reporters.push_back(&node);
  }
  // Generations never go backwards, even across a daemon restart.
  generation_ = std::max(generation_, latest);
  if (!reporters.empty()) {
    const Assignment& first = *reporters.front()->reported;
    std::vector<bool> seen(static_cast<size_t>(std::max(first.group_world_size, 0)), false);
    bool complete = static_cast<int>(reporters.size()) == first.group_world_size;
    for (Node* n : reporters) {
      const int r = n->reported->group_rank;
      if (r < 0 || r >= first.group_world_size || seen[static_cast<size_t>(r)]) {
        complete = false;
        break;
      }
      seen[static_cast<size_t>(r)] = true;
    }
    if (complete) {
      // Every member of the last generation is back with the same view: carry
      // on with it, and no worker restarts.
      for (auto& [id, node] : nodes_) node.member = false;
      for (Node* n : reporters) {
        n->member = true;
        n->group_rank = n->reported->group_rank;
        n->global_rank_offset = n->reported->global_rank_offset;
        restart_count_ = std::max(restart_count_, n->reported->restart_count);
        n->reported.reset();
      }
      phase_ = Phase::kRunning;
      round_deadline_.reset();
      Log(out, false,
          "event=rebuilt gen=" + std::to_string(generation_) +
              " nodes=" + std::to_string(reporters.size()));
      SummarizeGeneration();
      for (Node* n : reporters) SendAssignment(*n, out);
      if (static_cast<int>(nodes_.size()) > static_cast<int>(reporters.size()) &&
          static_cast<int>(reporters.size()) < max_nodes_) {
        round_deadline_ = now + settings_.last_call_timeout;  // admit the newcomers
      }
      return;
    }
  }
  if (!deadline_passed) return;
  // Someone did not come back in time: the reporters keep their order, and a
  // new generation starts without the missing nodes.
  for (auto& [id, node] : nodes_) {
    node.member = false;
    node.group_rank = -1;
  }
  for (Node* n : reporters) {
    n->member = true;
    n->group_rank = n->reported->group_rank;
    restart_count_ = std::max(restart_count_, n->reported->restart_count);
  }
  round_opened_ = now;
  if (static_cast<int>(nodes_.size()) >= min_nodes_) {
    StartGeneration(now, "rebuild after daemon restart found missing nodes", out);
    return;
  }
  phase_ = Phase::kGathering;
  gathering_since_ = now;
  round_deadline_.reset();
  for (auto& [id, node] : nodes_) {
    node.member = false;
    if (node.conn) {
      out.push_back(SendAction{node.conn, Waiting{run_id_, "below --nnodes MIN after rebuild"}});
    }
  }
  return;
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
  for (auto& [id, node] : nodes_) {
    if (node.conn) out.push_back(SendAction{node.conn, RunEnded{run_id_, succeeded, message}});
  }
  return;
}

Actions RunState::OnTick(Time now) {
  Actions out;
  if (phase_ == Phase::kEnded) return out;
  std::vector<std::pair<std::string, std::string>> dead;
  if (now >= next_node_check_) {
    next_node_check_ = Time::max();
    for (auto& [id, node] : nodes_) {
      if (node.conn == 0 && node.disconnected_at &&
          now - *node.disconnected_at >= settings_.disconnect_grace) {
        dead.emplace_back(id, "disconnected");
      } else if (now - node.last_seen > settings_.heartbeat_timeout) {
        // Silent (stopped, or its link is down): close the half-open socket too.
        if (node.conn) out.push_back(CloseAction{node.conn});
        BindConn(node, 0);
        dead.emplace_back(id, "silent");
      } else {
        next_node_check_ = std::min(next_node_check_, DeadlineOf(node));
      }
    }
  }
  for (const auto& [id, why] : dead) {
    NodeGone(id, now, why, out);
  }
  if (phase_ == Phase::kEnded) return out;
  if (drain_ && now >= drain_->deadline) {
    std::string late;
    for (const std::string& id : drain_->running) late += (late.empty() ? "" : ",") + id;
    Log(out, true,
        "event=drain_timeout gen=" + std::to_string(generation_) + " nodes=" + late +
            " (they did not report their workers stopped)");
    drain_->running.clear();
    FinishDrainIfDone(now, out);
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

Time RunState::DeadlineOf(const Node& node) const {
  if (node.conn == 0 && node.disconnected_at)
    return *node.disconnected_at + settings_.disconnect_grace;
  return node.last_seen + settings_.heartbeat_timeout + Duration(1);
}

void RunState::NoteDeadline(const Node& node) {
  next_node_check_ = std::min(next_node_check_, DeadlineOf(node));
}

nlohmann::json RunState::StatusJson(Time now) const {
  nlohmann::json nodes = nlohmann::json::array();
  // Members by group rank, then the others by node id: a stable, readable order.
  std::vector<const Node*> ordered;
  for (const auto& [id, node] : nodes_) ordered.push_back(&node);
  std::sort(ordered.begin(), ordered.end(), [](const Node* a, const Node* b) {
    if (a->member != b->member) return a->member;
    if (a->member) return a->group_rank < b->group_rank;
    return a->node_id < b->node_id;
  });
  for (const Node* node_ptr : ordered) {
    const Node& node = *node_ptr;
    nlohmann::json n = {
        {"node_id", node.node_id},
        {"host", node.host},
        {"state", node.member ? "member" : "waiting"},
        {"connected", node.conn != 0},
        {"local_world_size", node.local_world_size},
        {"heartbeat_age_ms",
         std::chrono::duration_cast<std::chrono::milliseconds>(now - node.last_seen).count()},
    };
    if (node.member) {
      n["group_rank"] = node.group_rank;
      n["global_ranks"] = {node.global_rank_offset,
                           node.global_rank_offset + node.local_world_size - 1};
    }
    nodes.push_back(n);
  }
  nlohmann::json run = {
      {"run_id", run_id_},
      {"state", PhaseName(phase_)},
      {"generation", generation_},
      {"min_nodes", min_nodes_},
      {"max_nodes", max_nodes_},
      {"restart_count", restart_count_},
      {"max_restarts", max_restarts_},
      {"nodes", nodes},
  };
  if (phase_ == Phase::kEnded) {
    run["result"] = end_succeeded_ ? "succeeded" : "failed";
    run["message"] = end_message_;
  }
  return run;
}

}  // namespace muster::rdzv
