#include "rendezvous/client/rendezvous_client.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <utility>

namespace muster::rdzv {
namespace asio = boost::asio;
using asio::ip::tcp;

RendezvousClient::RendezvousClient(asio::io_context& io, ClientOptions options, Callbacks callbacks)
    : io_(io),
      options_(std::move(options)),
      callbacks_(std::move(callbacks)),
      heartbeat_timer_(io),
      reconnect_timer_(io),
      connect_deadline_(io),
      fence_timer_(io),
      quiet_timer_(io),
      greet_deadline_(io),
      contact_timer_(io),
      last_contact_(std::chrono::steady_clock::now()),
      walk_(options_.endpoints),
      replicated_(walk_.replicated()),
      random_(std::random_device{}()) {}

RendezvousClient::~RendezvousClient() { Stop(); }

void RendezvousClient::Start() {
  if (options_.endpoints.empty()) {
    stopped_ = true;
    if (callbacks_.on_fatal) callbacks_.on_fatal("no rendezvous endpoint given");
    return;
  }
  last_contact_ = std::chrono::steady_clock::now();
  const auto [contact_limit, limit_name] = FirstContactLimit(options_.settings);
  contact_wait_.emplace(contact_limit, limit_name, last_contact_);
  contact_timer_.expires_at(contact_wait_->deadline());
  contact_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_ || !contact_wait_->Expired(std::chrono::steady_clock::now())) return;
    const std::string message = contact_wait_->GiveUpMessage();
    Stop();
    if (callbacks_.on_fatal) callbacks_.on_fatal(message);
  });
  Connect();
  Heartbeat();
  ArmFenceTimer(last_contact_ + options_.settings.fence_timeout);
}

void RendezvousClient::AttemptFailed(const Endpoint& endpoint, std::string cause) {
  spdlog::debug("event=rdzv_attempt_failed endpoint={} why=\"{}\"", endpoint.Text(), cause);
  if (auto warning = contact_wait_->OnAttemptFailed(endpoint, std::move(cause),
                                                    std::chrono::steady_clock::now())) {
    spdlog::warn("{}", *warning);
  }
}

void RendezvousClient::Stop() {
  if (stopped_) return;
  stopped_ = true;
  heartbeat_timer_.cancel();
  reconnect_timer_.cancel();
  connect_deadline_.cancel();
  fence_timer_.cancel();
  contact_timer_.cancel();
  quiet_timer_.cancel();
  for (auto& timer : delayed_heartbeats_) timer->cancel();
  greet_deadline_.cancel();
  if (attempt_) attempt_->Close("client stopping");
  attempt_.reset();
  if (channel_) channel_->Close("client stopping");
  channel_.reset();
}

void RendezvousClient::SetCurrent(std::optional<Assignment> current) {
  if (current) last_report_.ForgetBefore(current->generation);
  const bool stopped = current_ && !current;
  current_ = std::move(current);
  // A draining daemon starts the next generation once every member said its
  // workers are gone: say so now, not at the next heartbeat.
  if (stopped) SendHeartbeat();
}

rdzv::Heartbeat RendezvousClient::MakeHeartbeat() const {
  return {options_.join.run_id, options_.join.node_id, current_ ? current_->generation : 0};
}

void RendezvousClient::SendHeartbeat() {
  if (channel_) Send(MakeHeartbeat());
}

void RendezvousClient::Send(const Message& message) {
  if (channel_ && channel_->is_open() && !Suspended()) channel_->Send(message);
}

void RendezvousClient::SuspendTraffic(std::chrono::milliseconds duration) {
  suspended_until_ = std::chrono::steady_clock::now() + duration;
}

void RendezvousClient::DelayHeartbeats(std::chrono::milliseconds delay,
                                       std::chrono::milliseconds window) {
  heartbeat_delay_ = delay;
  delayed_until_ = std::chrono::steady_clock::now() + window;
}

void RendezvousClient::ReportWorkerFailure(uint64_t generation, int exit_code,
                                           const std::string& message) {
  last_report_.Record(generation, WorkerFailed{options_.join.run_id, options_.join.node_id,
                                               generation, exit_code, message});
  Send(*last_report_.pending());
}

void RendezvousClient::ReportSucceeded(uint64_t generation) {
  last_report_.Record(generation,
                      WorkersSucceeded{options_.join.run_id, options_.join.node_id, generation});
  Send(*last_report_.pending());
}

void RendezvousClient::Leave() { Send(rdzv::Leave{options_.join.run_id, options_.join.node_id}); }

void RendezvousClient::Connect() {
  // One attempt at a time: its outcome moves the walk on.
  if (stopped_ || connecting_ || attempt_) return;
  // Probing stops once the leader is heard again or the attempt was adopted.
  if (channel_ && !probing_) return;
  if (Suspended()) {
    // Cut off: an attempt would go unanswered, which is silence, not refusal.
    latest_failure_ = ContactFailure::kSilent;
    ScheduleReconnect(WalkNow().AfterFailure(false, UnitRandom()));
    return;
  }
  auto socket = std::make_shared<tcp::socket>(io_);
  const Endpoint target = walk_.Current();
  connecting_ = true;
  // A host whose link is down never answers: give up on the attempt in time
  // to try again (and so that silence, not refusal, is what we remember).
  // While the fence clock runs, the attempt takes only its share of the
  // time left, so that the endpoints after it are still tried in time.
  const auto now = std::chrono::steady_clock::now();
  attempt_bound_ = AttemptBound(AttemptDeadline(), FenceCheck(now), now, WalkNow().LeftInSweep());
  fence_cutoff_.reset();
  if (attempt_bound_ < AttemptDeadline()) fence_cutoff_ = now + attempt_bound_;
  connect_deadline_.expires_after(attempt_bound_);
  connect_deadline_.async_wait([socket](const boost::system::error_code& ec) {
    if (!ec) {
      boost::system::error_code ignored;
      socket->close(ignored);
    }
  });
  // Connects to the first of `endpoints` that answers.
  auto connect = [this, socket, target](const auto& endpoints) {
    asio::async_connect(
        *socket, endpoints,
        [this, socket, target](const boost::system::error_code& connect_ec, const tcp::endpoint&) {
          if (stopped_) return;
          connecting_ = false;
          connect_deadline_.cancel();
          if (connect_ec) {
            const bool refused = connect_ec == asio::error::connection_refused;
            latest_failure_ = FailureOf(refused);
            // The deadline closed the socket: the host never answered.
            AttemptFailed(target,
                          refused ? "refused the connection"
                          : connect_ec == asio::error::operation_aborted
                              ? "did not answer within " + SecondsText(attempt_bound_) + " s"
                              : connect_ec.message());
            // A live host with no replica on its port proves nothing of the
            // other replicas: no answer for the replicated fence rule.
            if (!refused) walk_.Suspect(walk_.Current(), std::chrono::steady_clock::now());
            ScheduleReconnect(WalkNow().AfterFailure(false, UnitRandom()));
            return;
          }
          OnConnected(std::move(*socket));
        });
  };
  // A numeric address needs no resolver: Asio resolves on a thread of its
  // own, started for the first lookup and joined when the agent forks or
  // exits, a wait for the scheduler each time (--standalone connects to
  // 127.0.0.1 before any worker starts).
  boost::system::error_code not_numeric;
  const asio::ip::address address = asio::ip::make_address(target.host, not_numeric);
  if (!not_numeric) {
    connect(std::vector<tcp::endpoint>{tcp::endpoint(address, target.port)});
    return;
  }
  auto resolver = std::make_shared<tcp::resolver>(io_);
  resolver->async_resolve(target.host, std::to_string(target.port),
                          [this, resolver, target, connect](const boost::system::error_code& ec,
                                                            tcp::resolver::results_type results) {
                            if (stopped_) return;
                            if (ec) {
                              connecting_ = false;
                              latest_failure_ = ContactFailure::kSilent;
                              AttemptFailed(target, "does not resolve (" + ec.message() + ")");
                              ScheduleReconnect(WalkNow().AfterFailure(false, UnitRandom()));
                              return;
                            }
                            connect(results);
                          });
}

void RendezvousClient::OnConnected(tcp::socket socket) {
  boost::system::error_code ec;
  attempt_local_addr_ = socket.local_endpoint(ec).address().to_string();
  attempt_ = std::make_shared<MessageChannel>(std::move(socket), MessageChannel::Limits{}, false);
  // Each handler knows its channel: the attempt, once adopted, is the one
  // served, and a replaced one is ignored.
  const MessageChannel* raw = attempt_.get();
  attempt_->Start({[this, raw](Message m) { OnChannelMessage(raw, m); },
                   [this, raw](const std::string& why, bool peer_gone) {
                     OnChannelClosed(raw, why, peer_gone);
                   },
                   {}});
  attempt_->Send(Hello{kProtocolVersion, options_.token, options_.join.node_id});
  // The Join goes with the Hello (a standby ignores it): a leader answers
  // both at once. A probe's Join reaching the leader that served us moves
  // this node to the new connection, which is harmless.
  Join join = MakeJoin();
  if (join.store_addr.empty()) join.store_addr = attempt_local_addr_;
  attempt_->Send(join);
  // A report sent while disconnected was dropped, and a restarted daemon
  // never saw one: repeat the last outcome after the Join. (A stale one is
  // refused as a stale generation, which is harmless.)
  if (const Message* report = last_report_.pending()) attempt_->Send(*report);
  // A process that accepts but never answers (stopped, hung) is no leader:
  // give up on it as on a connect that times out.
  const auto now = std::chrono::steady_clock::now();
  const auto greet_by =
      fence_cutoff_ ? std::min(now + AttemptDeadline(), *fence_cutoff_) : now + AttemptDeadline();
  const auto greet_wait = std::chrono::duration_cast<std::chrono::milliseconds>(greet_by - now);
  greet_deadline_.expires_at(greet_by);
  greet_deadline_.async_wait([this, raw, greet_wait](const boost::system::error_code& wait_ec) {
    if (wait_ec || attempt_.get() != raw) return;
    walk_.Suspect(walk_.Current(), std::chrono::steady_clock::now());
    attempt_->Close("accepted the connection but did not answer within " + SecondsText(greet_wait) +
                    " s");
  });
}

std::optional<std::chrono::steady_clock::time_point> RendezvousClient::FenceCheck(
    std::chrono::steady_clock::time_point now) const {
  // Only replicas offer another answer worth the time; before the first
  // contact, or once fenced, nothing runs here to keep.
  if (!replicated_ || fenced_ || !contact_wait_ || !contact_wait_->contacted()) return std::nullopt;
  const FenceDecision decision =
      DecideReplicatedFence(last_contact_, last_answer_, now, options_.settings);
  return decision.kind == FenceDecision::Kind::kWait ? decision.next_check : now;
}

std::chrono::milliseconds RendezvousClient::AttemptDeadline() const {
  // With replicas, another one may answer: do not wait on a dead host long.
  return replicated_
             ? std::min(options_.settings.connect_timeout, options_.settings.keep_alive_interval)
             : options_.settings.connect_timeout;
}

void RendezvousClient::OnChannelMessage(const MessageChannel* from, const Message& message) {
  if (Suspended()) return;
  if (attempt_ && from == attempt_.get()) return OnAttemptMessage(message);
  if (channel_ && from == channel_.get()) return OnMessage(message);
}

void RendezvousClient::OnAttemptMessage(const Message& message) {
  if (const auto* error = std::get_if<Error>(&message)) {
    if (error->code == ErrorCode::kNotLeader || error->code == ErrorCode::kNoLeader) {
      // A standby: an answer, never contact (it serves nobody).
      return OnStandbyAnswer(*error);
    }
    if (RefusedForGood(*error)) return;
    spdlog::debug("event=rdzv_error code={} message=\"{}\"", error->code_name(), error->message);
    return;
  }
  const auto* welcome = std::get_if<Welcome>(&message);
  if (welcome == nullptr) return;  // nothing comes before the Welcome
  if (welcome->epoch != 0) replicated_ = true;
  if (welcome->epoch < epoch_seen_) {
    // A deposed leader that has not noticed yet: not contact either.
    spdlog::warn("event=rdzv_stale_leader endpoint={} epoch={} seen={}", walk_.Current().Text(),
                 welcome->epoch, epoch_seen_);
    attempt_->Close("a leader of an older epoch");
    return;
  }
  epoch_seen_ = welcome->epoch;
  served_epoch_ = welcome->epoch;
  // Adopted: the attempt is the connection served from now on; one it
  // replaces (a leader gone quiet) is closed, and its close ignored.
  greet_deadline_.cancel();
  std::shared_ptr<MessageChannel> replaced = std::exchange(channel_, std::move(attempt_));
  local_addr_ = attempt_local_addr_;
  probing_ = false;
  if (replaced) replaced->Close("replaced by a connection to the leader");
  walk_.AfterWelcome();
  last_answer_.reset();
  OnMessage(message);  // contact
}

Join RendezvousClient::MakeJoin() const {
  Join join = options_.join;
  if (join.store_addr.empty()) join.store_addr = local_addr_;
  join.current = current_;
  join.last_generation = highest_assigned_;
  return join;
}

void RendezvousClient::OnMessage(const Message& message) {
  if (probing_) {
    // The leader is heard again: no need to look further.
    probing_ = false;
    if (attempt_) attempt_->Close("the leader answered again");
  }
  last_contact_ = std::chrono::steady_clock::now();
  latest_failure_ = ContactFailure::kNone;
  ArmFenceTimer(last_contact_ + options_.settings.fence_timeout);
  if (replicated_) ArmQuietTimer();
  if (std::holds_alternative<Welcome>(message)) {
    contact_wait_->OnContact();
    contact_timer_.cancel();
    // Said at the level the loss was: whoever read that needs this.
    if (std::exchange(lost_, false) || fenced_) {
      spdlog::warn("event=rdzv_reconnected endpoint={}", walk_.Current().Text());
    }
    if (replicated_) {
      spdlog::info("event=rdzv_leader endpoint={} epoch={}", walk_.Current().Text(), epoch_seen_);
    }
    fenced_ = false;
    return;
  }
  if (const auto* error = std::get_if<Error>(&message)) {
    if (RefusedForGood(*error)) return;
    if (error->code == ErrorCode::kUnknownNode || error->code == ErrorCode::kUnknownRun) {
      // The daemon no longer counts us in (it restarted, or declared us dead):
      // join again; the answer says whether our workers may go on.
      Send(MakeJoin());
      return;
    }
    spdlog::debug("event=rdzv_error code={} message=\"{}\"", error->code_name(), error->message);
    return;
  }
  if (const auto* waiting = std::get_if<Waiting>(&message)) {
    if (callbacks_.on_waiting) callbacks_.on_waiting(waiting->reason);
    // No workers here (or none left): a draining daemon need not wait for
    // the next heartbeat to know.
    if (!current_) SendHeartbeat();
    return;
  }
  if (const auto* assignment = std::get_if<AssignmentMessage>(&message)) {
    if (assignment->epoch < epoch_seen_) {
      spdlog::warn("event=rdzv_stale_assignment gen={} epoch={} seen={}",
                   assignment->assignment.generation, assignment->epoch, epoch_seen_);
      return;
    }
    last_report_.ForgetBefore(assignment->assignment.generation);
    highest_assigned_ = std::max(highest_assigned_, assignment->assignment.generation);
    if (callbacks_.on_assignment) callbacks_.on_assignment(assignment->assignment);
    return;
  }
  if (const auto* ended = std::get_if<RunEnded>(&message)) {
    if (callbacks_.on_run_ended) callbacks_.on_run_ended(ended->succeeded, ended->message);
    return;
  }
}

bool RendezvousClient::RefusedForGood(const Error& error) {
  if (!error.fatal && error.code != ErrorCode::kBadToken && error.code != ErrorCode::kBadVersion) {
    return false;
  }
  Stop();
  if (callbacks_.on_fatal) {
    callbacks_.on_fatal("the rendezvous at " + walk_.Current().Text() + " refused this agent: " +
                        error.message + " (" + std::string(error.code_name()) + ")");
  }
  return true;
}

void RendezvousClient::OnStandbyAnswer(const Error& error) {
  replicated_ = true;
  // Only evidence that no leader has taken over since this agent was served
  // buys time (fence_rule.h, R2; takeover_hold.h).
  if (StandbyAnswerPredatesTakeover(error, served_epoch_)) {
    last_answer_ = std::chrono::steady_clock::now();
  }
  spdlog::debug("event=rdzv_standby endpoint={} code={} message=\"{}\"", walk_.Current().Text(),
                error.code_name(), error.message);
  walk_.Answered();
  standby_answer_ = error;
  attempt_->Close("answered by a standby");
}

void RendezvousClient::OnChannelClosed(const MessageChannel* which, const std::string& why,
                                       bool daemon_gone) {
  if (stopped_) return;
  const auto now = std::chrono::steady_clock::now();
  if (attempt_ && which == attempt_.get()) {
    attempt_.reset();
    greet_deadline_.cancel();
    const std::optional<Error> standby = std::exchange(standby_answer_, std::nullopt);
    std::chrono::milliseconds delay;
    if (standby) {
      std::optional<Endpoint> leader;
      if (!standby->leader.empty()) {
        if (auto parsed = ParseLeader(standby->leader); parsed.ok()) {
          leader = *parsed;
        } else {
          spdlog::warn("event=rdzv_bad_leader leader=\"{}\"", standby->leader);
        }
      }
      // A leader of a higher epoch than any heard before was elected since
      // whatever failure the walk holds against it.
      const bool newly_elected = leader && standby->epoch > epoch_seen_;
      epoch_seen_ = std::max(epoch_seen_, standby->epoch);
      // During an election the walk keeps the standbys' pace; once this
      // agent has fenced, nothing is urgent and it backs off.
      const bool pace = !fenced_;
      delay = leader ? WalkNow().AfterRedirect(*leader, UnitRandom(), newly_elected)
                     : WalkNow().AfterFailure(pace, UnitRandom());
    } else {
      AttemptFailed(walk_.Current(), daemon_gone ? "closed the connection before answering" : why);
      if (!channel_) latest_failure_ = FailureOf(daemon_gone);
      delay = WalkNow().AfterFailure(false, UnitRandom());
    }
    // A leader still served (a probe that found nothing better, or the
    // leader heard again) needs no more attempts.
    if (channel_ && !probing_) return;
    return ScheduleReconnect(delay);
  }
  if (!channel_ || which != channel_.get()) return;  // one replaced since
  spdlog::warn("event=rdzv_connection_lost endpoint={} why=\"{}\"; reconnecting",
               walk_.Current().Text(), why);
  lost_ = true;
  channel_.reset();
  quiet_timer_.cancel();
  latest_failure_ = FailureOf(daemon_gone);
  if (daemon_gone) last_answer_ = now;
  const bool was_probing = std::exchange(probing_, false);
  // A probe under way carries the walk on.
  if (was_probing && (attempt_ || connecting_)) return;
  ScheduleReconnect(WalkNow().AfterFailure(false, UnitRandom()));
}

double RendezvousClient::UnitRandom() {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  return unit(random_);
}

void RendezvousClient::ScheduleReconnect(std::chrono::milliseconds delay) {
  if (stopped_) return;
  reconnect_timer_.expires_after(delay);
  reconnect_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) Connect();
  });
}

void RendezvousClient::ArmQuietTimer() {
  quiet_timer_.expires_at(last_contact_ + QuietAfter());
  quiet_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) StartProbing();
  });
}

std::chrono::milliseconds RendezvousClient::QuietAfter() const {
  // The leader acks every heartbeat, at most every fence_timeout / 3: past
  // one such gap and a heartbeat more, an ack is missing.
  const auto& s = options_.settings;
  return std::max(s.keep_alive_interval * 3 / 2, s.fence_timeout / 3 + s.keep_alive_interval);
}

void RendezvousClient::StartProbing() {
  if (stopped_ || !channel_ || probing_ || Suspended()) return;
  const auto now = std::chrono::steady_clock::now();
  // A handler that had expired before a message re-armed the timer.
  if (now - last_contact_ < QuietAfter()) return;
  spdlog::warn("event=rdzv_leader_quiet endpoint={} ms={}", walk_.Current().Text(),
               std::chrono::duration_cast<std::chrono::milliseconds>(now - last_contact_).count());
  // The connection stays: the leader may only be slow, and hears our
  // heartbeats meanwhile. The walk looks for whoever leads now, and the
  // replicas' answers keep the workers (fence_rule.h).
  probing_ = true;
  walk_.Suspect(walk_.Current(), now);
  ScheduleReconnect(WalkNow().AfterFailure(false, UnitRandom()));
}

void RendezvousClient::Heartbeat() {
  if (stopped_) return;
  if (channel_) {
    const rdzv::Heartbeat beat = MakeHeartbeat();
    if (std::chrono::steady_clock::now() < delayed_until_) {
      std::erase_if(delayed_heartbeats_,
                    [](const auto& t) { return t->expiry() <= std::chrono::steady_clock::now(); });
      auto late = std::make_shared<asio::steady_timer>(io_, heartbeat_delay_);
      delayed_heartbeats_.push_back(late);
      late->async_wait([this, beat, late](const boost::system::error_code& ec) {
        if (!ec) Send(beat);
      });
    } else {
      Send(beat);
    }
  }
  heartbeat_timer_.expires_after(options_.settings.keep_alive_interval);
  heartbeat_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) Heartbeat();
  });
}

void RendezvousClient::ArmFenceTimer(std::chrono::steady_clock::time_point when) {
  // Its own timer, not the heartbeat tick: the fence must fire at
  // fence_timeout sharp, before the daemon's heartbeat_timeout hands this
  // node's ranks to others.
  fence_timer_.expires_at(when);
  fence_timer_.async_wait([this](const boost::system::error_code& ec) {
    // Before the first contact nothing runs here to fence; ContactWait bounds
    // that wait instead.
    if (ec || stopped_ || fenced_ || !contact_wait_->contacted()) return;
    const auto now = std::chrono::steady_clock::now();
    const FenceDecision decision =
        replicated_ ? DecideReplicatedFence(last_contact_, last_answer_, now, options_.settings)
                    : DecideFence(last_contact_, latest_failure_, now, options_.settings);
    if (decision.kind == FenceDecision::Kind::kWait) {
      ArmFenceTimer(decision.next_check);
      return;
    }
    fenced_ = true;
    // Nothing runs to protect any more: a rendezvous rebuilt from an older
    // etcd (lower epochs) may be followed again.
    epoch_seen_ = 0;
    spdlog::warn("event=fence why=\"{}\"", decision.why);
    if (callbacks_.on_fence) callbacks_.on_fence(decision.why);
  });
}

}  // namespace muster::rdzv
