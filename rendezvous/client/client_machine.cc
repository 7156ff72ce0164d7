#include "rendezvous/client/client_machine.h"

#include <algorithm>
#include <utility>

#include "common/clock.h"
#include "common/exhaustive_visit.h"
#include "rendezvous/client/timing_agreement.h"

namespace muster::rdzv {
namespace {

using std::chrono::milliseconds;

ClientLog Debug(std::string line) { return {ClientLog::Level::kDebug, std::move(line)}; }
ClientLog Info(std::string line) { return {ClientLog::Level::kInfo, std::move(line)}; }
ClientLog Warn(std::string line) { return {ClientLog::Level::kWarn, std::move(line)}; }

std::string Quoted(const std::string& text) { return "\"" + text + "\""; }

ClientLog ErrorLine(const Error& error) {
  return Debug("event=rdzv_error code=" + std::string(error.code_name()) +
               " message=" + Quoted(error.message));
}

// What agents send: a daemon never does, and an agent ignores one.
template <typename M>
concept AgentRequest =
    OneOf<M, Hello, Join, Heartbeat, WorkerFailed, WorkersSucceeded, Leave, StatusRequest>;

}  // namespace

ClientMachine::ClientMachine(ClientOptions options, uint64_t seed)
    : options_(std::move(options)),
      configured_(options_.settings),
      random_(seed),
      walk_(options_.endpoints),
      replicated_(walk_.replicated()) {}

void ClientMachine::Enter(ClientTrigger trigger, State to, ClientActions& out) {
  const ClientTransition transition{state_, trigger, to};
  if (!IsClientTransition(transition)) {
    out.push_back(Warn("event=rdzv_client_stray_transition " + ClientTransitionText(transition)));
    if (!stray_transition_) stray_transition_ = transition;
  }
  last_transition_ = transition;
  state_ = to;
}

ClientActions ClientMachine::Start(Time now) {
  ClientActions out;
  if (options_.endpoints.empty()) {
    Enter(ClientTrigger::kGiveUp, State::kStopped, out);
    out.push_back(GiveUp{"no rendezvous endpoint given"});
    return out;
  }
  last_contact_ = now;
  const auto [contact_limit, limit_name] = FirstContactLimit(options_.settings);
  contact_wait_.emplace(contact_limit, limit_name, now);
  out.push_back(ArmTimer{ClientTimer::kFirstContact, contact_wait_->deadline()});
  Connect(now, out);
  out.push_back(ArmTimer{ClientTimer::kHeartbeat, now + options_.settings.keep_alive_interval});
  out.push_back(ArmTimer{ClientTimer::kFence, now + options_.settings.fence_timeout});
  return out;
}

ClientActions ClientMachine::Stop() { return Halt(ClientTrigger::kStop); }

ClientActions ClientMachine::Halt(ClientTrigger trigger) {
  ClientActions out;
  if (stopped()) return out;
  Enter(trigger, State::kStopped, out);
  for (ClientTimer timer : kClientTimers) out.push_back(CancelTimer{timer});
  if (attempt_) out.push_back(CloseLink{attempt_->id, "client stopping"});
  attempt_.reset();
  if (served_) out.push_back(CloseLink{served_->id, "client stopping"});
  served_.reset();
  return out;
}

void ClientMachine::Send(const Message& message, ClientActions& out) const {
  if (served_) out.push_back(SendTo{served_->id, message});
}

Heartbeat ClientMachine::MakeHeartbeat() const {
  return {options_.join.run_id,
          options_.join.node_id,
          current_ ? current_->generation : 0,
          current_ ? step_ : 0,
          {}};
}

void ClientMachine::SetProgress(uint64_t step) { step_ = step; }

void ClientMachine::SetCompute(std::vector<uint64_t> compute_us) {
  if (compute_us.size() > kMaxComputeRanks) compute_us.resize(kMaxComputeRanks);
  compute_us_ = std::move(compute_us);
}

Join ClientMachine::MakeJoin() const {
  Join join = options_.join;
  if (join.store_addr.empty()) join.store_addr = local_addr_;
  join.current = current_;
  join.last_generation = highest_assigned_;
  return join;
}

ClientActions ClientMachine::SetCurrent(std::optional<Assignment> current) {
  ClientActions out;
  if (stopped()) return out;
  if (current) last_report_.ForgetBefore(current->generation);
  const bool workers_stopped = current_ && !current;
  // Steps count per generation: a step of the last one is not this one's.
  if (!current || !current_ || current->generation != current_->generation) {
    step_ = 0;
    compute_us_.clear();
  }
  current_ = std::move(current);
  // A draining daemon starts the next generation once every member said its
  // workers are gone: say so now, not at the next heartbeat.
  if (workers_stopped) Send(MakeHeartbeat(), out);
  return out;
}

ClientActions ClientMachine::ReportWorkerFailure(uint64_t generation, int exit_code,
                                                 const std::string& message) {
  ClientActions out;
  last_report_.Record(generation, WorkerFailed{options_.join.run_id, options_.join.node_id,
                                               generation, exit_code, message});
  if (!stopped()) Send(*last_report_.pending(), out);
  return out;
}

ClientActions ClientMachine::ReportSucceeded(uint64_t generation) {
  ClientActions out;
  last_report_.Record(generation,
                      WorkersSucceeded{options_.join.run_id, options_.join.node_id, generation});
  if (!stopped()) Send(*last_report_.pending(), out);
  return out;
}

ClientActions ClientMachine::Leave() {
  ClientActions out;
  if (!stopped()) Send(rdzv::Leave{options_.join.run_id, options_.join.node_id}, out);
  return out;
}

double ClientMachine::UnitRandom() {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  return unit(random_);
}

std::chrono::milliseconds ClientMachine::AttemptDeadline() const {
  // With replicas, another one may answer: do not wait on a dead host long.
  return replicated_
             ? std::min(options_.settings.connect_timeout, options_.settings.keep_alive_interval)
             : options_.settings.connect_timeout;
}

std::optional<Time> ClientMachine::FenceCheck(Time now) const {
  // Only replicas offer another answer worth the time; before the first
  // contact, or once fenced, nothing runs here to keep.
  if (!replicated_ || fenced_ || !contact_wait_ || !contact_wait_->contacted()) return std::nullopt;
  const FenceDecision decision =
      DecideReplicatedFence(last_contact_, last_answer_, now, options_.settings);
  return decision.kind == FenceDecision::Kind::kWait ? decision.next_check : now;
}

std::chrono::milliseconds ClientMachine::QuietAfter() const {
  // The leader acks every heartbeat, at most every fence_timeout / 3: past
  // one such gap and a heartbeat more, an ack is missing.
  const auto& s = options_.settings;
  return std::max(s.keep_alive_interval * 3 / 2, s.fence_timeout / 3 + s.keep_alive_interval);
}

void ClientMachine::Connect(Time now, ClientActions& out) {
  // One attempt at a time: its outcome moves the walk on.
  if (stopped() || attempt_) return;
  // Probing stops once the leader is heard again or the attempt was adopted.
  if (state_ == State::kServed) return;
  // A host whose link is down never answers: give up on the attempt in time
  // to try again (and so that silence, not refusal, is what is remembered).
  // While the fence clock runs, the attempt takes only its share of the
  // time left, so that the endpoints after it are still tried in time.
  attempt_bound_ = AttemptBound(AttemptDeadline(), FenceCheck(now), now, WalkAt(now).LeftInSweep());
  fence_cutoff_.reset();
  if (attempt_bound_ < AttemptDeadline()) fence_cutoff_ = now + attempt_bound_;
  attempt_ = Link{next_link_++, walk_.Current(), "", false};
  attempt_deadline_ = now + attempt_bound_;
  out.push_back(ConnectTo{attempt_->id, attempt_->endpoint});
  out.push_back(ArmTimer{ClientTimer::kAttempt, attempt_deadline_});
}

void ClientMachine::ScheduleRetry(std::chrono::milliseconds delay, Time now, ClientActions& out) {
  if (stopped()) return;
  out.push_back(ArmTimer{ClientTimer::kRetry, now + delay});
}

void ClientMachine::NoteFailure(const Endpoint& endpoint, const std::string& cause, Time now,
                                ClientActions& out) {
  out.push_back(
      Debug("event=rdzv_attempt_failed endpoint=" + endpoint.Text() + " why=" + Quoted(cause)));
  if (auto warning = contact_wait_->OnAttemptFailed(endpoint, cause, now)) {
    out.push_back(Warn(*warning));
  }
}

void ClientMachine::CloseAttempt(const std::string& why, ClientTrigger trigger,
                                 ClientActions& out) {
  out.push_back(CancelTimer{ClientTimer::kAttempt});
  out.push_back(CloseLink{attempt_->id, why});
  attempt_.reset();
  // Probing or fenced, the state stays.
  if (state_ == State::kGreeting) Enter(trigger, State::kConnecting, out);
}

void ClientMachine::AttemptFailed(const std::string& why, bool refused, Time now,
                                  ClientActions& out, const std::string& cause) {
  const Endpoint endpoint = attempt_->endpoint;
  CloseAttempt(why, ClientTrigger::kAttemptEnded, out);
  NoteFailure(endpoint,
              refused         ? "closed the connection before answering"
              : cause.empty() ? why
                              : cause,
              now, out);
  if (!served_) latest_failure_ = FailureOf(refused);
  const auto delay = WalkAt(now).AfterFailure(EndpointWalk::AttemptEnd::kNoAnswer, UnitRandom());
  // A leader still served (a probe that found nothing better, or the leader
  // heard again) needs no more attempts.
  if (state_ == State::kServed) return;
  ScheduleRetry(delay, now, out);
}

ClientActions ClientMachine::OnConnected(LinkId link, const std::string& local_addr, Time now) {
  ClientActions out;
  if (stopped() || !attempt_ || attempt_->id != link || attempt_->open) return out;
  attempt_->open = true;
  attempt_->local_addr = local_addr;
  // Probing or fenced, the state stays.
  if (state_ == State::kConnecting) Enter(ClientTrigger::kConnected, State::kGreeting, out);
  out.push_back(SendTo{link, Hello{kProtocolVersion, options_.token, options_.join.node_id}});
  // The Join goes with the Hello (a standby ignores it): a leader answers
  // both at once. A probe's Join reaching the leader that served us moves
  // this node to the new connection, which is harmless.
  Join join = MakeJoin();
  if (join.store_addr.empty()) join.store_addr = local_addr;
  out.push_back(SendTo{link, join});
  // A report sent while disconnected was dropped, and a restarted daemon
  // never saw one: repeat the last outcome after the Join. (A stale one is
  // refused as a stale generation, which is harmless.)
  if (const Message* report = last_report_.pending()) out.push_back(SendTo{link, *report});
  // A process that accepts but never answers (stopped, hung) is no leader:
  // give up on it as on a connect that times out.
  Time greet_by = now + AttemptDeadline();
  if (fence_cutoff_) greet_by = std::min(greet_by, *fence_cutoff_);
  out.push_back(ArmTimer{ClientTimer::kAttempt, greet_by});
  attempt_deadline_ = greet_by;
  attempt_bound_ = std::chrono::duration_cast<milliseconds>(greet_by - now);
  return out;
}

ClientActions ClientMachine::OnConnectFailed(LinkId link, ConnectError error,
                                             const std::string& cause, Time now) {
  ClientActions out;
  if (stopped() || !attempt_ || attempt_->id != link || attempt_->open) return out;
  const Endpoint endpoint = attempt_->endpoint;
  out.push_back(CancelTimer{ClientTimer::kAttempt});
  attempt_.reset();
  if (error == ConnectError::kTlsFailed) {
    RefusedTls(endpoint.Text(), cause, out);
    return out;
  }
  const bool refused = error == ConnectError::kRefused;
  latest_failure_ = FailureOf(refused);
  NoteFailure(endpoint, cause, now, out);
  // A live host with no replica on its port proves nothing of the other
  // replicas; a host that never answered is suspect.
  if (error == ConnectError::kSilent) walk_.Suspect(endpoint, now);
  ScheduleRetry(WalkAt(now).AfterFailure(EndpointWalk::AttemptEnd::kNoAnswer, UnitRandom()), now,
                out);
  return out;
}

ClientActions ClientMachine::OnMessage(LinkId link, const Message& message, Time now) {
  ClientActions out;
  if (stopped()) return out;
  if (attempt_ && attempt_->open && attempt_->id == link) {
    OnAttemptMessage(message, now, out);
  } else if (served_ && served_->id == link) {
    OnServedMessage(message, now, out);
  }
  return out;
}

ClientActions ClientMachine::OnClosed(LinkId link, const std::string& why, ChannelEnd end,
                                      Time now) {
  ClientActions out;
  if (stopped()) return out;
  const bool peer_gone = end == ChannelEnd::kPeerGone;
  if (end == ChannelEnd::kTlsFailed && attempt_ && attempt_->id == link) {
    RefusedTls(attempt_->endpoint.Text(), why, out);
  } else if (attempt_ && attempt_->id == link) {
    AttemptFailed(why, peer_gone, now, out);
  } else if (served_ && served_->id == link) {
    OnServedLost(why, peer_gone, now, out);
  }
  return out;
}

ClientActions ClientMachine::OnTimer(ClientTimer timer, Time now) {
  ClientActions out;
  if (stopped()) return out;
  switch (timer) {
    case ClientTimer::kHeartbeat: {
      Heartbeat heartbeat = MakeHeartbeat();
      // Compute times ride on one heartbeat per update (the others keep the
      // daemon's fast path).
      if (current_) heartbeat.compute_us = std::exchange(compute_us_, {});
      Send(heartbeat, out);
      out.push_back(ArmTimer{ClientTimer::kHeartbeat, now + options_.settings.keep_alive_interval});
      break;
    }
    case ClientTimer::kRetry:
      Connect(now, out);
      break;
    case ClientTimer::kAttempt:
      // A timer already due when the attempt connected (and re-armed it)
      // still fires: only the attempt's current deadline ends it.
      if (!attempt_ || now < attempt_deadline_) break;
      // An attempt cut short by its share of the time before the fence says
      // nothing of its host (it may be the leader a standby just named): it
      // is suspect only when its whole deadline ran out.
      if (attempt_bound_ >= AttemptDeadline()) walk_.Suspect(attempt_->endpoint, now);
      if (attempt_->open) {
        AttemptFailed("accepted the connection but did not answer within " +
                          SecondsText(attempt_bound_) + " s",
                      /*refused=*/false, now, out);
      } else {
        // The host never answered the connect: silence, not refusal.
        AttemptFailed("no answer to the connect", /*refused=*/false, now, out,
                      "did not answer within " + SecondsText(attempt_bound_) + " s");
      }
      break;
    case ClientTimer::kFence:
      DecideFence(now, out);
      break;
    case ClientTimer::kQuiet:
      StartProbing(now, out);
      break;
    case ClientTimer::kFirstContact:
      if (!contact_wait_->Expired(now)) break;
      {
        const std::string message = contact_wait_->GiveUpMessage();
        out = Halt(ClientTrigger::kGiveUp);
        out.push_back(GiveUp{message});
      }
      break;
  }
  return out;
}

void ClientMachine::OnAttemptMessage(const Message& message, Time now, ClientActions& out) {
  VisitEvery(
      message,
      [&](const Error& error) {
        if (error.code == ErrorCode::kNotLeader || error.code == ErrorCode::kNoLeader) {
          // A standby: an answer, never contact (it serves nobody).
          return OnStandbyAnswer(error, now, out);
        }
        if (RefusedForGood(error, out)) return;
        out.push_back(ErrorLine(error));
      },
      [&](const Welcome& welcome) { OnAttemptWelcome(welcome, message, now, out); },
      // Nothing else comes before the Welcome.
      [](const AgentRequest auto&) {},
      [](const OneOf<Waiting, AssignmentMessage, HeartbeatAck, RunEnded, StatusReply> auto&) {});
}

void ClientMachine::OnAttemptWelcome(const Welcome& welcome, const Message& message, Time now,
                                     ClientActions& out) {
  if (welcome.epoch != 0) replicated_ = true;
  if (welcome.epoch < epoch_seen_) {
    // A deposed leader that has not noticed yet: not contact either.
    out.push_back(Warn("event=rdzv_stale_leader endpoint=" + attempt_->endpoint.Text() + " epoch=" +
                       std::to_string(welcome.epoch) + " seen=" + std::to_string(epoch_seen_)));
    return AttemptFailed("a leader of an older epoch", /*refused=*/false, now, out);
  }
  if (!AdoptTiming(welcome.timing, now, out)) return;
  epoch_seen_ = welcome.epoch;
  served_epoch_ = welcome.epoch;
  // Adopted: the attempt is the link served from now on; one it replaces (a
  // leader gone quiet) is closed.
  out.push_back(CancelTimer{ClientTimer::kAttempt});
  std::optional<Link> replaced = std::exchange(served_, std::move(attempt_));
  attempt_.reset();
  local_addr_ = served_->local_addr;
  Enter(ClientTrigger::kWelcome, State::kServed, out);
  if (replaced) out.push_back(CloseLink{replaced->id, "replaced by a connection to the leader"});
  walk_.AfterWelcome();
  last_answer_.reset();
  OnServedMessage(message, now, out);  // contact
}

bool ClientMachine::AdoptTiming(const DaemonTiming& timing, Time now, ClientActions& out) {
  // The same daemon (or replicas of one configuration) welcomes again after
  // every reconnect: one warning, not one per Welcome.
  if (adopted_timing_ == timing) return true;
  auto adopted = AdoptDaemonTiming(configured_, timing);
  if (!adopted.ok()) {
    const std::string where = attempt_->endpoint.Text();
    for (ClientAction& action : Halt(ClientTrigger::kGiveUp)) out.push_back(std::move(action));
    out.push_back(GiveUp{"the rendezvous at " + where +
                         " cannot be followed: " + adopted.status().message()});
    return false;
  }
  const bool interval_changed =
      adopted->settings.keep_alive_interval != options_.settings.keep_alive_interval;
  options_.settings = adopted->settings;
  adopted_timing_ = timing;
  if (!adopted->differences.empty()) {
    out.push_back(Warn("event=rdzv_timing_adopted endpoint=" + attempt_->endpoint.Text() + " " +
                       adopted->differences +
                       "; heartbeats and fencing follow the rendezvous's --rdzv-conf"));
  }
  // A heartbeat armed at this agent's own, longer interval could come after
  // the daemon's heartbeat_timeout.
  if (interval_changed) {
    out.push_back(ArmTimer{ClientTimer::kHeartbeat, now + options_.settings.keep_alive_interval});
  }
  return true;
}

void ClientMachine::OnStandbyAnswer(const Error& error, Time now, ClientActions& out) {
  replicated_ = true;
  // Only evidence that no leader has taken over since this agent was served
  // buys time (fence_rule.h, R2; takeover_hold.h).
  if (StandbyAnswerPredatesTakeover(error, served_epoch_)) last_answer_ = now;
  out.push_back(Debug("event=rdzv_standby endpoint=" + attempt_->endpoint.Text() + " code=" +
                      std::string(error.code_name()) + " message=" + Quoted(error.message)));
  walk_.Answered();
  CloseAttempt("answered by a standby", ClientTrigger::kStandbyAnswered, out);
  std::optional<Endpoint> leader;
  if (!error.leader.empty()) {
    if (auto parsed = ParseLeader(error.leader); parsed.ok()) {
      leader = *parsed;
    } else {
      out.push_back(Warn("event=rdzv_bad_leader leader=" + Quoted(error.leader)));
    }
  }
  // A leader of a higher epoch than any heard before was elected since
  // whatever failure the walk holds against it.
  const bool newly_elected = leader && error.epoch > epoch_seen_;
  epoch_seen_ = std::max(epoch_seen_, error.epoch);
  const auto delay =
      leader ? WalkAt(now).AfterRedirect(*leader, UnitRandom(), newly_elected)
             : WalkAt(now).AfterFailure(EndpointWalk::AttemptEnd::kStandbyAnswered, UnitRandom());
  // A leader still served (a probe that found nothing better, or the leader
  // heard again) needs no more attempts.
  if (state_ == State::kServed) return;
  ScheduleRetry(delay, now, out);
}

void ClientMachine::OnServedMessage(const Message& message, Time now, ClientActions& out) {
  if (state_ == State::kProbing) {
    // The leader is heard again: no need to look further.
    Enter(ClientTrigger::kLeaderHeard, State::kServed, out);
    if (attempt_) AttemptFailed("the leader answered again", /*refused=*/false, now, out);
  }
  last_contact_ = now;
  last_heard_ = now;
  latest_failure_ = ContactFailure::kNone;
  out.push_back(ArmTimer{ClientTimer::kFence, now + options_.settings.fence_timeout});
  if (replicated_) out.push_back(ArmTimer{ClientTimer::kQuiet, now + QuietAfter()});
  VisitEvery(
      message,
      [&](const Welcome&) {
        contact_wait_->OnContact();
        out.push_back(CancelTimer{ClientTimer::kFirstContact});
        // Said at the level the loss was: whoever read that needs this.
        if (std::exchange(lost_, false) || fenced_) {
          out.push_back(Warn("event=rdzv_reconnected endpoint=" + served_->endpoint.Text()));
        }
        if (replicated_) {
          out.push_back(Info("event=rdzv_leader endpoint=" + served_->endpoint.Text() +
                             " epoch=" + std::to_string(epoch_seen_)));
        }
        fenced_ = false;
        walk_.set_pace(EndpointWalk::Pace::kElection);
      },
      [&](const Error& error) {
        if (RefusedForGood(error, out)) return;
        if (error.code == ErrorCode::kUnknownNode || error.code == ErrorCode::kUnknownRun) {
          // The daemon no longer counts us in (it restarted, or declared us
          // dead): join again; the answer says whether our workers may go on.
          return Send(MakeJoin(), out);
        }
        out.push_back(ErrorLine(error));
      },
      [&](const Waiting& waiting) {
        out.push_back(DeliverWaiting{waiting.reason});
        // No workers here (or none left): a draining daemon need not wait for
        // the next heartbeat to know.
        if (!current_) Send(MakeHeartbeat(), out);
      },
      [&](const AssignmentMessage& assignment) {
        if (assignment.epoch < epoch_seen_) {
          out.push_back(Warn("event=rdzv_stale_assignment gen=" +
                             std::to_string(assignment.assignment.generation) +
                             " epoch=" + std::to_string(assignment.epoch) +
                             " seen=" + std::to_string(epoch_seen_)));
          return;
        }
        last_report_.ForgetBefore(assignment.assignment.generation);
        highest_assigned_ = std::max(highest_assigned_, assignment.assignment.generation);
        out.push_back(DeliverAssignment{assignment.assignment, assignment.member_addrs});
      },
      [&](const RunEnded& ended) {
        out.push_back(DeliverRunEnded{ended.succeeded, ended.message});
      },
      // Contact and nothing more: an ack, or what no daemon sends an agent.
      [](const AgentRequest auto&) {}, [](const OneOf<HeartbeatAck, StatusReply> auto&) {});
}

void ClientMachine::OnServedLost(const std::string& why, bool peer_gone, Time now,
                                 ClientActions& out) {
  out.push_back(Warn("event=rdzv_connection_lost endpoint=" + served_->endpoint.Text() +
                     " why=" + Quoted(why) + "; reconnecting"));
  lost_ = true;
  served_.reset();
  const bool was_probing = state_ == State::kProbing;
  Enter(ClientTrigger::kServedLost,
        fenced_                      ? State::kFenced
        : attempt_ && attempt_->open ? State::kGreeting
                                     : State::kConnecting,
        out);
  out.push_back(CancelTimer{ClientTimer::kQuiet});
  latest_failure_ = FailureOf(peer_gone);
  // The leader that served this agent closed it: no leader took over yet.
  if (peer_gone) last_answer_ = now;
  // A probe under way carries the walk on.
  if (was_probing && attempt_) return;
  ScheduleRetry(WalkAt(now).AfterFailure(EndpointWalk::AttemptEnd::kNoAnswer, UnitRandom()), now,
                out);
}

bool ClientMachine::RefusedForGood(const Error& error, ClientActions& out) {
  if (!error.fatal && error.code != ErrorCode::kBadToken && error.code != ErrorCode::kBadVersion) {
    return false;
  }
  const std::string where = walk_.Current().Text();
  for (ClientAction& action : Halt(ClientTrigger::kGiveUp)) out.push_back(std::move(action));
  out.push_back(GiveUp{"the rendezvous at " + where + " refused this agent: " + error.message +
                       " (" + std::string(error.code_name()) + ")"});
  return true;
}

void ClientMachine::RefusedTls(const std::string& where, const std::string& why,
                               ClientActions& out) {
  for (ClientAction& action : Halt(ClientTrigger::kGiveUp)) out.push_back(std::move(action));
  out.push_back(GiveUp{"TLS with the rendezvous at " + where + " failed: " + why});
}

void ClientMachine::StartProbing(Time now, ClientActions& out) {
  if (state_ != State::kServed) return;
  // A timer that fired as a message re-armed it.
  if (now - last_contact_ < QuietAfter()) return;
  out.push_back(
      Warn("event=rdzv_leader_quiet endpoint=" + served_->endpoint.Text() + " ms=" +
           std::to_string(std::chrono::duration_cast<milliseconds>(now - last_contact_).count())));
  // The link stays: the leader may only be slow, and hears our heartbeats
  // meanwhile. The walk looks for whoever leads now, and the replicas'
  // answers keep the workers (fence_rule.h).
  Enter(ClientTrigger::kQuiet, State::kProbing, out);
  walk_.Suspect(walk_.Current(), now);
  ScheduleRetry(WalkAt(now).AfterFailure(EndpointWalk::AttemptEnd::kNoAnswer, UnitRandom()), now,
                out);
}

void ClientMachine::DecideFence(Time now, ClientActions& out) {
  // Before the first contact nothing runs here to fence; ContactWait bounds
  // that wait instead.
  if (fenced_ || !contact_wait_->contacted()) return;
  const FenceDecision decision =
      replicated_ ? DecideReplicatedFence(last_contact_, last_answer_, now, options_.settings)
                  : rdzv::DecideFence(last_contact_, latest_failure_, now, options_.settings);
  if (decision.kind == FenceDecision::Kind::kWait) {
    out.push_back(ArmTimer{ClientTimer::kFence, decision.next_check});
    return;
  }
  fenced_ = true;
  // A link still served stays so, fenced.
  if (state_ == State::kConnecting || state_ == State::kGreeting) {
    Enter(ClientTrigger::kFence, State::kFenced, out);
  }
  // Nothing runs to protect any more: a rendezvous rebuilt from an older
  // etcd (lower epochs) may be followed again, and nothing is urgent.
  epoch_seen_ = 0;
  walk_.set_pace(EndpointWalk::Pace::kBackoff);
  out.push_back(Warn("event=fence why=" + Quoted(decision.why)));
  out.push_back(FenceWorkers{decision.why});
}

}  // namespace muster::rdzv
