#include "rendezvous/client/rendezvous_client.h"

#include <spdlog/spdlog.h>

#include <boost/asio/connect.hpp>

#include "common/backoff.h"

namespace muster::rdzv {
namespace asio = boost::asio;
using asio::ip::tcp;

namespace {
constexpr std::chrono::milliseconds kBackoffBase{50};
constexpr std::chrono::milliseconds kBackoffCap{500};
}  // namespace

RendezvousClient::RendezvousClient(asio::io_context& io, ClientOptions options, Callbacks callbacks)
    : io_(io),
      options_(std::move(options)),
      callbacks_(std::move(callbacks)),
      heartbeat_timer_(io),
      reconnect_timer_(io),
      connect_deadline_(io),
      fence_timer_(io),
      last_contact_(std::chrono::steady_clock::now()),
      random_(std::random_device{}()) {}

RendezvousClient::~RendezvousClient() { Stop(); }

void RendezvousClient::Start() {
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
    ScheduleReconnect();
    return;
  }
  auto socket = std::make_shared<tcp::socket>(io_);
  auto resolver = std::make_shared<tcp::resolver>(io_);
  // A host whose link is down never answers: give up on the attempt in time
  // to try again (and so that silence, not refusal, is what we remember).
  connect_deadline_.expires_after(options_.settings.connect_timeout);
  connect_deadline_.async_wait([socket](const boost::system::error_code& ec) {
    if (!ec) {
      boost::system::error_code ignored;
      socket->close(ignored);
    }
  });
  resolver->async_resolve(
      options_.host, std::to_string(options_.port),
      [this, socket, resolver](const boost::system::error_code& ec,
                               tcp::resolver::results_type results) {
        if (stopped_) return;
        if (ec) {
          latest_failure_ = ContactFailure::kSilent;
          spdlog::debug("event=rdzv_resolve_failed host={} error=\"{}\"", options_.host,
                        ec.message());
          ScheduleReconnect();
          return;
        }
        asio::async_connect(
            *socket, results,
            [this, socket](const boost::system::error_code& connect_ec, const tcp::endpoint&) {
              if (stopped_) return;
              connect_deadline_.cancel();
              if (connect_ec) {
                latest_failure_ = FailureOf(connect_ec == asio::error::connection_refused);
                ScheduleReconnect();
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
  return join;
}

void RendezvousClient::OnMessage(const Message& message) {
  if (Suspended()) return;
  last_contact_ = std::chrono::steady_clock::now();
  latest_failure_ = ContactFailure::kNone;
  ArmFenceTimer(last_contact_ + options_.settings.fence_timeout);
  if (std::holds_alternative<Welcome>(message)) {
    welcomed_ = true;
    attempt_ = 0;
    if (fenced_) spdlog::info("event=rdzv_reconnected");
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
    last_report_.ForgetBefore(assignment->assignment.generation);
    if (callbacks_.on_assignment) callbacks_.on_assignment(assignment->assignment);
    return;
  }
  if (const auto* ended = std::get_if<RunEnded>(&message)) {
    if (callbacks_.on_run_ended) callbacks_.on_run_ended(ended->succeeded, ended->message);
    return;
  }
}

void RendezvousClient::OnClosed(const std::string& why, bool daemon_gone) {
  if (stopped_) return;
  spdlog::warn("event=rdzv_connection_lost why=\"{}\"", why);
  welcomed_ = false;
  latest_failure_ = FailureOf(daemon_gone);
  channel_.reset();
  ScheduleReconnect();
}

void RendezvousClient::ScheduleReconnect() {
  if (stopped_) return;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const auto delay = NextBackoff(attempt_++, kBackoffBase, kBackoffCap, unit(random_));
  reconnect_timer_.expires_after(delay);
  reconnect_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) Connect();
  });
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
    const FenceDecision decision = DecideFence(last_contact_, latest_failure_,
                                               std::chrono::steady_clock::now(), options_.settings);
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
