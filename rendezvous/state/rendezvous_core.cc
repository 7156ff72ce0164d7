#include "rendezvous/state/rendezvous_core.h"

#include <algorithm>
#include <iterator>

#include "common/exhaustive_visit.h"
#include "rendezvous/state/refusal.h"

namespace muster::rdzv {
namespace {

// Reports and heartbeats name their run; one the daemon does not know (it
// restarted, or the run was forgotten) is refused, and the agent joins again.
Actions RefuseUnknownRun(ConnId conn, std::string_view run_id) {
  return Refusal(conn, ErrorCode::kUnknownRun,
                 "run '" + std::string(run_id) + "' is not known here; join first",
                 Refused::kMayRetry);
}

}  // namespace

RunState* RendezvousCore::RunOf(ConnId conn) {
  auto it = conn_run_.find(conn);
  if (it == conn_run_.end()) return nullptr;
  auto run = runs_.find(it->second);
  return run == runs_.end() ? nullptr : run->second.get();
}

Actions RendezvousCore::Handle(const Event& event, Time now) {
  return VisitEvery(
      event,
      [&](const MessageEvent& e) { return HandleMessage(e.conn, e.message, e.peer_addr, now); },
      [&](const DisconnectEvent& e) {
        Actions out;
        if (RunState* run = RunOf(e.conn)) out = run->OnDisconnect(e.conn, now);
        conn_run_.erase(e.conn);
        return out;
      },
      [&](const StallEvent&) {
        for (auto& [id, run] : runs_) run->OnDaemonStalled(now);
        return Actions{};
      },
      [&](const TickEvent&) {
        Actions out;
        for (auto it = runs_.begin(); it != runs_.end();) {
          for (auto& action : it->second->OnTick(now)) out.push_back(std::move(action));
          if (it->second->ended() && now - it->second->ended_at() >= kEndedRunRetention) {
            retired_ += it->second->counters();
            it = runs_.erase(it);
          } else {
            ++it;
          }
        }
        return out;
      });
}

Actions RendezvousCore::HandleMessage(ConnId conn, const Message& message,
                                      const std::string& peer_addr, Time now) {
  auto find = [this](const std::string& run_id) -> RunState* {
    auto it = runs_.find(run_id);
    return it == runs_.end() ? nullptr : it->second.get();
  };
  return VisitEvery(
      message,
      [&](const Join& join) -> Actions {
        // A connection serves one run: joining another is a client bug.
        if (auto it = conn_run_.find(conn); it != conn_run_.end() && it->second != join.run_id) {
          return Refusal(
              conn, ErrorCode::kBadRequest,
              "this connection already joined run '" + it->second + "'; use one connection per run",
              Refused::kMayRetry);
        }
        RunState* run = find(join.run_id);
        if (run != nullptr && run->ended() && !join.current) {
          // A run id may be reused once its last run is over.
          runs_.erase(join.run_id);
          run = nullptr;
        }
        if (run == nullptr) {
          run = runs_
                    .emplace(join.run_id, std::make_unique<RunState>(join.run_id, join, settings_,
                                                                     now, takeover_))
                    .first->second.get();
          run->set_event_log(events_);
          // A record seeds the run it was kept for, not a later one of the same id.
          takeover_.records.erase(join.run_id);
        }
        conn_run_[conn] = join.run_id;
        return run->OnJoin(conn, join, peer_addr, now);
      },
      [&](const Heartbeat& hb) -> Actions {
        Actions out;
        HandleHeartbeat(conn, HeartbeatView(hb), now, out);
        return out;
      },
      [&](const WorkerFailed& f) -> Actions {
        RunState* run = find(f.run_id);
        return run ? run->OnWorkerFailed(conn, f, now) : RefuseUnknownRun(conn, f.run_id);
      },
      [&](const WorkersSucceeded& s) -> Actions {
        RunState* run = find(s.run_id);
        return run ? run->OnWorkersSucceeded(conn, s, now) : RefuseUnknownRun(conn, s.run_id);
      },
      [&](const Leave& l) -> Actions {
        RunState* run = find(l.run_id);
        return run ? run->OnLeave(conn, l, now) : Actions{};
      },
      [&](const StatusRequest& r) -> Actions {
        // Formatted by the shell: whether the reply fits in a frame is a
        // matter of bytes (rendezvous/daemon/status_reply.h).
        return {StatusReplyAction{conn, Status(r.run_id, now)}};
      },
      // A Hello after the first (the shell drops one), or what only a
      // daemon sends.
      [&](const OneOf<Hello, Welcome, Error, Waiting, AssignmentMessage, HeartbeatAck, RunEnded,
                      StatusReply> auto&) -> Actions {
        return Refusal(conn, ErrorCode::kBadRequest, "not a request the daemon accepts",
                       Refused::kFatal);
      });
}

void RendezvousCore::HandleHeartbeat(ConnId conn, const HeartbeatView& hb, Time now, Actions& out) {
  auto it = runs_.find(hb.run_id);
  if (it == runs_.end()) {
    std::ranges::move(RefuseUnknownRun(conn, hb.run_id), std::back_inserter(out));
    return;
  }
  it->second->OnHeartbeat(conn, hb, now, out);
}

StatusSnapshot RendezvousCore::Status(std::string_view run_id, Time now) const {
  StatusSnapshot snapshot;
  for (const auto& [id, run] : runs_) {
    if (!run_id.empty() && id != run_id) continue;
    snapshot.runs.push_back(run->Status(now));
  }
  for (const DaemonEvent& event : events_->events()) {
    if (!run_id.empty() && event.run_id != run_id && !event.run_id.empty()) continue;
    snapshot.events.push_back(
        EventStatus{std::chrono::duration_cast<std::chrono::milliseconds>(now - event.at),
                    event.kind, event.run_id, event.node_id, event.text});
  }
  return snapshot;
}

RendezvousCore::Totals RendezvousCore::totals() const {
  Totals t;
  static_cast<RunState::Counters&>(t) = retired_;
  for (const auto& [id, run] : runs_) {
    ++t.runs;
    if (run->phase() == RunState::Phase::kRunning) ++t.runs_running;
    t.nodes += run->member_count();
    t += run->counters();
  }
  return t;
}

std::vector<RunRecord> RendezvousCore::Records() const {
  std::vector<RunRecord> out;
  out.reserve(runs_.size());
  for (const auto& [id, run] : runs_) out.push_back(run->Record());
  return out;
}

}  // namespace muster::rdzv
