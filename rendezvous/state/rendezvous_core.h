// RendezvousCore: every run the daemon serves, keyed by run id, plus which
// connection belongs to which run. Pure like RunState: the daemon shell feeds
// it events with the current time and carries out the returned actions.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "rendezvous/state/run_state.h"
#include "rendezvous/state/status_snapshot.h"

namespace muster::rdzv {

class RendezvousCore {
 public:
  // `takeover`: what a replica that has just taken the lead starts its runs
  // from (run_record.h); empty for a daemon that starts or restarts.
  explicit RendezvousCore(Settings settings, Takeover takeover = {})
      : settings_(settings), takeover_(std::move(takeover)) {}

  // Every run's record, ended ones included (until they are forgotten).
  std::vector<RunRecord> Records() const;

  // The settings every run of this core acts on (a leader's are widened,
  // lead_change.h): what a Welcome tells agents (hello_gate.h).
  const Settings& settings() const { return settings_; }

  Actions Handle(const Event& event, Time now);
  // The hot path of Handle(MessageEvent{conn, Heartbeat}): the same outcome,
  // appended to `out`, with no copy of the heartbeat's strings.
  void HandleHeartbeat(ConnId conn, const HeartbeatView& hb, Time now, Actions& out);

  // Every run by run id, or only `run_id` when not empty (no run when it is
  // not known). A StatusRequest is answered with it, as a StatusReplyAction
  // that the shell formats.
  StatusSnapshot Status(std::string_view run_id, Time now) const;

  // The daemon's recent events (run_history.h), which every run adds to.
  // A shell that replaces its core (a change of lead) hands the new one the
  // old one's log, so the events outlive it, and notes the change itself.
  const std::shared_ptr<EventLog>& event_log() const { return events_; }
  // REQUIRES: no run yet (a core just made); `events` not null.
  void set_event_log(std::shared_ptr<EventLog> events) { events_ = std::move(events); }

  // Counters of every run, ended and forgotten ones included, plus gauges.
  struct Totals : RunState::Counters {
    size_t runs = 0;
    size_t runs_running = 0;
    size_t nodes = 0;
  };
  Totals totals() const;

  // How long an ended run stays visible in status before it is forgotten.
  static constexpr Duration kEndedRunRetention{60'000};

 private:
  Actions HandleMessage(ConnId conn, const Message& message, const std::string& peer_addr,
                        Time now);
  RunState* RunOf(ConnId conn);

  Settings settings_;
  Takeover takeover_;
  std::map<std::string, std::unique_ptr<RunState>, std::less<>> runs_;
  std::map<ConnId, std::string> conn_run_;
  // Counters of forgotten runs, so totals never go down.
  RunState::Counters retired_;
  std::shared_ptr<EventLog> events_ = std::make_shared<EventLog>();
};

}  // namespace muster::rdzv
