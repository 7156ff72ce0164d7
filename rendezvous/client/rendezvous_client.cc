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
  Connect();
  Heartbeat();
  ArmFenceTimer(last_contact_ + options_.settings.fence_timeout);
}

void RendezvousClient::Stop() {
  if (stopped_) return;
  stopped_ = true;
  heartbeat_timer_.cancel();
  reconnect_timer_.cancel();
  connect_deadline_.cancel();
  fence_timer_.cancel();
  quiet_timer_.cancel();
  for (auto& timer : delayed_heartbeats_) timer->cancel();
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
  if (welcomed_) Send(MakeHeartbeat());
}

void RendezvousClient::Send(const Message& message) {
  if (channel_ && channel_->is_open() && welcomed_ && !Suspended()) channel_->Send(message);
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
  if (stopped_) return;
  if (Suspended()) {
    // Cut off: an attempt would go unanswered, which is silence, not refusal.
    latest_failure_ = ContactFailure::kSilent;
    ScheduleReconnect(walk_.AfterFailure(false, UnitRandom()));
    return;
  }
  auto socket = std::make_shared<tcp::socket>(io_);
  auto resolver = std::make_shared<tcp::resolver>(io_);
  const Endpoint target = walk_.Current();
  // A host whose link is down never answers: give up on the attempt in time
  // to try again (and so that silence, not refusal, is what we remember).
  // With replicas, another one may answer: do not wait on a dead host long.
  const auto deadline = replicated_ ? std::min(options_.settings.connect_timeout,
                                               options_.settings.keep_alive_interval)
                                    : options_.settings.connect_timeout;
  connect_deadline_.expires_after(deadline);
  connect_deadline_.async_wait([socket](const boost::system::error_code& ec) {
    if (!ec) {
      boost::system::error_code ignored;
      socket->close(ignored);
    }
  });
  resolver->async_resolve(
      target.host, std::to_string(target.port),
      [this, socket, resolver, target](const boost::system::error_code& ec,
                                       tcp::resolver::results_type results) {
        if (stopped_) return;
        if (ec) {
          latest_failure_ = ContactFailure::kSilent;
          spdlog::debug("event=rdzv_resolve_failed host={} error=\"{}\"", target.host,
                        ec.message());
          ScheduleReconnect(walk_.AfterFailure(false, UnitRandom()));
          return;
        }
        asio::async_connect(
            *socket, results,
            [this, socket](const boost::system::error_code& connect_ec, const tcp::endpoint&) {
              if (stopped_) return;
              connect_deadline_.cancel();
              if (connect_ec) {
                const bool refused = connect_ec == asio::error::connection_refused;
                latest_failure_ = FailureOf(refused);
                // A live host with no replica on the port: an answer.
                if (refused) last_answer_ = std::chrono::steady_clock::now();
                ScheduleReconnect(walk_.AfterFailure(false, UnitRandom()));
                return;
              }
              OnConnected(std::move(*socket));
            });
      });
}

void RendezvousClient::OnConnected(tcp::socket socket) {
  boost::system::error_code ec;
  // The address this host reached the daemon from is one the other nodes
  // can reach too: advertise it for the worker store unless told otherwise.
  local_addr_ = socket.local_endpoint(ec).address().to_string();
  channel_ = std::make_shared<MessageChannel>(std::move(socket), MessageChannel::Limits{}, false);
  welcomed_ = false;
  // The daemon's side closing (or resetting) the connection means its host
  // answered: the daemon process is gone or dropped us.
  channel_->Start({[this](Message m) { OnMessage(m); },
                   [this](const std::string& why, bool peer_gone) { OnClosed(why, peer_gone); },
                   {}});
  channel_->Send(Hello{kProtocolVersion, options_.token, options_.join.node_id});
  channel_->Send(MakeJoin());
  // A report sent while disconnected was dropped, and a restarted daemon
  // never saw one: repeat the last outcome after the Join. (A stale one is
  // refused as a stale generation, which is harmless.)
  if (const Message* report = last_report_.pending()) channel_->Send(*report);
}

Join RendezvousClient::MakeJoin() const {
  Join join = options_.join;
  if (join.store_addr.empty()) join.store_addr = local_addr_;
  join.current = current_;
  join.last_generation = highest_assigned_;
  return join;
}

void RendezvousClient::OnMessage(const Message& message) {
  if (Suspended()) return;
  if (const auto* error = std::get_if<Error>(&message);
      error != nullptr &&
      (error->code == ErrorCode::kNotLeader || error->code == ErrorCode::kNoLeader)) {
    // A standby: an answer, never contact (it serves nobody).
    return OnStandbyAnswer(*error);
  }
  if (const auto* welcome = std::get_if<Welcome>(&message)) {
    if (welcome->epoch != 0) replicated_ = true;
    if (welcome->epoch < epoch_seen_) {
      // A deposed leader that has not noticed yet: not contact either.
      spdlog::warn("event=rdzv_stale_leader endpoint={} epoch={} seen={}", walk_.Current().Text(),
                   welcome->epoch, epoch_seen_);
      last_answer_ = std::chrono::steady_clock::now();
      if (channel_) channel_->Close("a leader of an older epoch");
      return;
    }
    epoch_seen_ = welcome->epoch;
  }
  last_contact_ = std::chrono::steady_clock::now();
  latest_failure_ = ContactFailure::kNone;
  ArmFenceTimer(last_contact_ + options_.settings.fence_timeout);
  if (replicated_) ArmQuietTimer();
  if (std::holds_alternative<Welcome>(message)) {
    welcomed_ = true;
    walk_.AfterWelcome();
    last_answer_.reset();
    if (fenced_) spdlog::info("event=rdzv_reconnected");
    if (replicated_) {
      spdlog::info("event=rdzv_leader endpoint={} epoch={}", walk_.Current().Text(), epoch_seen_);
    }
    fenced_ = false;
    return;
  }
  if (const auto* error = std::get_if<Error>(&message)) {
    if (error->fatal || error->code == ErrorCode::kBadToken ||
        error->code == ErrorCode::kBadVersion) {
      spdlog::error("rendezvous refused this agent: {} ({})", error->message, error->code_name());
      Stop();
      if (callbacks_.on_fatal) callbacks_.on_fatal(error->message);
      return;
    }
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

void RendezvousClient::OnStandbyAnswer(const Error& error) {
  replicated_ = true;
  last_answer_ = std::chrono::steady_clock::now();
  epoch_seen_ = std::max(epoch_seen_, error.epoch);
  spdlog::debug("event=rdzv_standby endpoint={} code={} message=\"{}\"", walk_.Current().Text(),
                error.code_name(), error.message);
  standby_answer_ = error;
  if (channel_) channel_->Close("answered by a standby");
}

void RendezvousClient::OnClosed(const std::string& why, bool daemon_gone) {
  if (stopped_) return;
  const std::optional<Error> standby = std::exchange(standby_answer_, std::nullopt);
  const bool was_welcomed = welcomed_;
  welcomed_ = false;
  channel_.reset();
  if (standby) {
    if (!standby->leader.empty()) {
      if (auto leader = ParseLeader(standby->leader); leader.ok()) {
        return ScheduleReconnect(walk_.AfterRedirect(*leader, UnitRandom()));
      }
      spdlog::warn("event=rdzv_bad_leader leader=\"{}\"", standby->leader);
    }
    return ScheduleReconnect(walk_.AfterFailure(true, UnitRandom()));
  }
  if (was_welcomed) {
    spdlog::warn("event=rdzv_connection_lost endpoint={} why=\"{}\"", walk_.Current().Text(), why);
  } else {
    spdlog::debug("event=rdzv_connection_lost endpoint={} why=\"{}\"", walk_.Current().Text(), why);
  }
  latest_failure_ = FailureOf(daemon_gone);
  if (daemon_gone) last_answer_ = std::chrono::steady_clock::now();
  ScheduleReconnect(walk_.AfterFailure(false, UnitRandom()));
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
  // Acks come every keep_alive_interval: one and a half without one is a
  // missed ack, and the fence rule needs a replica's answer before
  // fence_timeout to keep the workers.
  quiet_timer_.expires_at(last_contact_ + options_.settings.keep_alive_interval * 3 / 2);
  quiet_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) LeaveQuietLeader();
  });
}

void RendezvousClient::LeaveQuietLeader() {
  if (stopped_ || !channel_ || !welcomed_ || Suspended()) return;
  const auto quiet = std::chrono::steady_clock::now() - last_contact_;
  spdlog::warn("event=rdzv_leader_quiet endpoint={} ms={}", walk_.Current().Text(),
               std::chrono::duration_cast<std::chrono::milliseconds>(quiet).count());
  channel_->Close("the leader went quiet");
}

void RendezvousClient::Heartbeat() {
  if (stopped_) return;
  if (welcomed_) {
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
    if (ec || stopped_ || fenced_) return;
    const auto now = std::chrono::steady_clock::now();
    const FenceDecision decision =
        replicated_ ? DecideReplicatedFence(last_contact_, last_answer_, now, options_.settings)
                    : DecideFence(last_contact_, latest_failure_, now, options_.settings);
    if (decision.kind == FenceDecision::Kind::kWait) {
      ArmFenceTimer(decision.next_check);
      return;
    }
    fenced_ = true;
    spdlog::warn("event=fence why=\"{}\"", decision.why);
    if (callbacks_.on_fence) callbacks_.on_fence(decision.why);
  });
}

}  // namespace muster::rdzv
