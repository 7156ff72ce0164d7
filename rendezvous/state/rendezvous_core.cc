#include "rendezvous/state/rendezvous_core.h"

#include <nlohmann/json.hpp>

#include "rendezvous/protocol/frame_codec.h"
#include "rendezvous/protocol/message_codec.h"

namespace muster::rdzv {
namespace {

template <typename... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <typename... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

}  // namespace

RunState* RendezvousCore::RunOf(ConnId conn) {
  auto it = conn_run_.find(conn);
  if (it == conn_run_.end()) return nullptr;
  auto run = runs_.find(it->second);
  return run == runs_.end() ? nullptr : run->second.get();
}

Actions RendezvousCore::Handle(const Event& event, Time now) {
  return std::visit(
      Overloaded{
          [&](const MessageEvent& e) { return HandleMessage(e.conn, e.message, now); },
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
          },
      },
      event);
}

Actions RendezvousCore::HandleMessage(ConnId conn, const Message& message, Time now) {
  auto refuse_unknown_run = [conn](const std::string& run_id) {
    return Actions{
        SendAction{conn, Error{ErrorCode::kUnknownRun,
                               "run '" + run_id + "' is not known here; join first", false}}};
  };
  auto find = [this](const std::string& run_id) -> RunState* {
    auto it = runs_.find(run_id);
    return it == runs_.end() ? nullptr : it->second.get();
  };
  return std::visit(
      Overloaded{
          [&](const Join& join) -> Actions {
            // A connection serves one run: joining another is a client bug.
            if (auto it = conn_run_.find(conn);
                it != conn_run_.end() && it->second != join.run_id) {
              return {SendAction{conn, Error{ErrorCode::kBadRequest,
                                             "this connection already joined run '" + it->second +
                                                 "'; use one connection per run",
                                             false}}};
            }
            RunState* run = find(join.run_id);
            if (run != nullptr && run->ended() && !join.current) {
              // A run id may be reused once its last run is over.
              runs_.erase(join.run_id);
              run = nullptr;
            }
            if (run == nullptr) {
              run = runs_
                        .emplace(join.run_id,
                                 std::make_unique<RunState>(join.run_id, join, settings_, now))
                        .first->second.get();
            }
            conn_run_[conn] = join.run_id;
            return run->OnJoin(conn, join, now);
          },
          [&](const Heartbeat& hb) -> Actions {
            Actions out;
            HandleHeartbeat(conn, HeartbeatView(hb), now, out);
            return out;
          },
          [&](const WorkerFailed& f) -> Actions {
            RunState* run = find(f.run_id);
            return run ? run->OnWorkerFailed(conn, f, now) : refuse_unknown_run(f.run_id);
          },
          [&](const WorkersSucceeded& s) -> Actions {
            RunState* run = find(s.run_id);
            return run ? run->OnWorkersSucceeded(conn, s, now) : refuse_unknown_run(s.run_id);
          },
          [&](const Leave& l) -> Actions {
            RunState* run = find(l.run_id);
            return run ? run->OnLeave(conn, l, now) : Actions{};
          },
          [&](const StatusRequest& r) -> Actions {
            // Encoded here to learn its size: a reply over the bound the
            // client accepts would only break its connection.
            auto frame =
                std::make_shared<const std::string>(Encode(StatusReply{StatusJson(r.run_id, now)}));
            const size_t bytes = frame->size() - kFrameLengthBytes;
            if (bytes > kMaxStatusReplyFrameBytes) {
              return {SendAction{
                  conn, Error{ErrorCode::kBadRequest,
                              "the status document is " + std::to_string(bytes) +
                                  " bytes, over the " + std::to_string(kMaxStatusReplyFrameBytes) +
                                  "-byte bound of a StatusReply; ask for one run (--run-id)",
                              false}}};
            }
            return {SendFrameAction{conn, std::move(frame)}};
          },
          [&](const auto&) -> Actions {
            return {SendAction{conn, Error{ErrorCode::kBadRequest,
                                           "not a request the daemon accepts", true}},
                    CloseAction{conn}};
          },
      },
      message);
}

void RendezvousCore::HandleHeartbeat(ConnId conn, const HeartbeatView& hb, Time now, Actions& out) {
  auto it = runs_.find(hb.run_id);
  if (it == runs_.end()) {
    out.push_back(SendAction{
        conn, Error{ErrorCode::kUnknownRun,
                    "run '" + std::string(hb.run_id) + "' is not known here; join first", false}});
    return;
  }
  it->second->OnHeartbeat(conn, hb, now, out);
}

std::string RendezvousCore::StatusJson(const std::string& run_id, Time now) const {
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& [id, run] : runs_) {
    if (!run_id.empty() && id != run_id) continue;
    runs.push_back(run->StatusJson(now));
  }
  return nlohmann::json{{"runs", runs}}.dump();
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

}  // namespace muster::rdzv
