#include "rendezvous/daemon/rendezvous_server.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <random>
#include <sstream>

#include "common/exhaustive_visit.h"
#include "rendezvous/daemon/advertised_address.h"
#include "rendezvous/daemon/run_metrics.h"
#include "rendezvous/daemon/status_reply.h"
#include "rendezvous/protocol/heartbeat_fast_path.h"
#include "rendezvous/protocol/message_codec.h"
#include "rendezvous/state/hello_gate.h"
#include "rendezvous/state/lead_change.h"

namespace muster::rdzv {
namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

std::string NewDaemonId() {
  std::random_device rd;
  std::ostringstream id;
  id << std::hex << getpid() << "-" << rd() << rd();
  return id.str();
}

}  // namespace

RendezvousServer::RendezvousServer(asio::io_context& io, ServerOptions options)
    : io_(io),
      options_(std::move(options)),
      acceptor_(io),
      tick_timer_(io),
      sweep_timer_(io),
      accept_retry_(io.get_executor()),
      core_(std::make_unique<RendezvousCore>(options_.settings)),
      daemon_id_(NewDaemonId()) {}

RendezvousServer::~RendezvousServer() { Stop(); }

Result<std::unique_ptr<RendezvousServer>> RendezvousServer::Start(asio::io_context& io,
                                                                  ServerOptions options) {
  std::unique_ptr<RendezvousServer> server(new RendezvousServer(io, options));
  const std::string where = options.host + ":" + std::to_string(options.port);
  boost::system::error_code ec;
  tcp::resolver resolver(io);
  auto results = resolver.resolve(options.host, std::to_string(options.port),
                                  tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    return Status::InvalidArgument("rendezvous: cannot resolve host '" + options.host +
                                   "': " + ec.message());
  }
  const tcp::endpoint endpoint = results.begin()->endpoint();
  server->acceptor_.open(endpoint.protocol(), ec);
  if (!ec) server->acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) server->acceptor_.bind(endpoint, ec);
  if (!ec) server->acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec == asio::error::address_in_use) {
    return Status::FailedPrecondition("rendezvous: cannot listen on " + where + ": " +
                                      ec.message());
  }
  if (ec) return Status::IoError("rendezvous: cannot listen on " + where + ": " + ec.message());
  server->port_ = server->acceptor_.local_endpoint(ec).port();
  server->Accept();
  server->Tick();
  server->Sweep();
  spdlog::info("event=listening host={} port={} daemon_id={} tls={}", options.host, server->port_,
               server->daemon_id_,
               !options.tls            ? "off"
               : options.tls->mutual() ? "mutual"
                                       : "server");
  return server;
}

void RendezvousServer::Accept() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
    if (stopped_) return;
    if (ec) {
      // Out of file descriptors and the like: back off instead of spinning.
      if (AcceptRetry::Pauses(ec)) {
        spdlog::warn("event=accept_failed error=\"{}\"", ec.message());
        accept_retry_.After([this] {
          if (!stopped_) Accept();
        });
      }
      return;
    }
    if (sessions_.size() >= options_.max_connections) {
      ++rejected_;
      boost::system::error_code ignored;
      socket.close(ignored);
      Accept();
      return;
    }
    const ConnId conn = next_conn_++;
    boost::system::error_code peer_ec;
    boost::system::error_code local_ec;
    const auto peer = socket.remote_endpoint(peer_ec);
    const auto local = socket.local_endpoint(local_ec);
    auto channel = std::make_shared<MessageChannel>(std::move(socket), options_.limits,
                                                    MessageChannel::BadInput::kReply, options_.tls);
    sessions_[conn] =
        Session{channel, false, Clock::now(), peer_ec ? "" : peer.address().to_string(),
                local_ec ? "" : local.address().to_string()};
    channel->Start(
        {[this, conn](Message m) { OnMessage(conn, std::move(m)); },
         [this, conn](const std::string& why, ChannelEnd end) { OnClosed(conn, why, end); },
         [this, conn](uint8_t type, std::string_view payload) {
           return type == static_cast<uint8_t>(MessageType::kHeartbeat) &&
                  OnHeartbeatFrame(conn, payload);
         }});
    Accept();
  });
}

void RendezvousServer::OnMessage(ConnId conn, Message message) {
  auto it = sessions_.find(conn);
  if (it == sessions_.end()) return;
  Session& session = it->second;
  const auto now = Clock::now();
  if (!session.greeted) {
    const HelloAnswer answer =
        AnswerHello(message, options_.token, daemon_id_, core_->settings(), replica_, now);
    if (answer.verdict == HelloAnswer::Verdict::kWelcome) {
      session.greeted = true;
      session.channel->Send(answer.reply);
      return;
    }
    const Error& refusal = std::get<Error>(answer.reply);
    const std::string name(ErrorCodeName(refusal.code));
    if (answer.verdict == HelloAnswer::Verdict::kRefused) {
      ++bad_hellos_;
      spdlog::warn("event=refused peer={} code={} why=\"{}\"", session.channel->peer(), name,
                   refusal.message);
    } else {
      spdlog::debug("event=redirected peer={} code={} why=\"{}\"", session.channel->peer(), name,
                    refusal.message);
    }
    session.channel->Send(refusal);
    session.channel->CloseAfterFlush(name);
    return;
  }
  // A leader whose lease ran out acts on nothing more (Tick drops everyone).
  if (!replica_.Serves(now)) return;
  if (std::holds_alternative<Hello>(message)) return;  // repeated Hello: harmless
  // A Join carries the connection's address: the master's store admits it.
  std::string peer_addr = std::holds_alternative<Join>(message) ? session.peer_addr : "";
  Apply(core_->Handle(MessageEvent{conn, std::move(message), std::move(peer_addr)}, now));
}

bool RendezvousServer::OnHeartbeatFrame(ConnId conn, std::string_view payload) {
  // Anything but the plain form, or a heartbeat before Hello, takes the
  // general path with its full checks.
  auto hb = DecodePlainHeartbeatView(payload);
  if (!hb) return false;
  auto it = sessions_.find(conn);
  if (it == sessions_.end() || !it->second.greeted) return false;
  const auto now = Clock::now();
  if (!replica_.Serves(now)) return true;  // dropped by Tick
  // Reused, so a heartbeat allocates nothing. Apply() never comes back here:
  // no read completes inside it.
  heartbeat_actions_.clear();
  core_->HandleHeartbeat(conn, *hb, now, heartbeat_actions_);
  // The usual outcome, the run's ack to this connection, goes out on the
  // session already found; anything else through Apply().
  if (heartbeat_actions_.size() == 1) {
    const auto* ack = std::get_if<SendFrameAction>(&heartbeat_actions_.front());
    if (ack != nullptr && ack->conn == conn) {
      it->second.channel->SendFrame(*ack->frame);
      return true;
    }
  }
  Apply(heartbeat_actions_);
  return true;
}

void RendezvousServer::OnClosed(ConnId conn, const std::string& why, ChannelEnd end) {
  auto it = sessions_.find(conn);
  if (it == sessions_.end()) return;
  const bool greeted = it->second.greeted;
  if (end == ChannelEnd::kTlsFailed) {
    ++tls_failures_;
    spdlog::warn("event=tls_refused peer={} why=\"{}\"", it->second.channel->peer(), why);
  }
  sessions_.erase(it);
  spdlog::debug("event=connection_closed conn={} why=\"{}\"", conn, why);
  if (greeted && !stopped_) {
    Apply(core_->Handle(DisconnectEvent{conn}, Clock::now()));
  }
}

void RendezvousServer::Apply(const Actions& actions) {
  for (const Action& action : actions) {
    VisitEvery(
        action,
        [this](const SendAction& send) {
          auto it = sessions_.find(send.conn);
          if (it == sessions_.end()) return;
          const Session& session = it->second;
          if (const auto* assigned = std::get_if<AssignmentMessage>(&send.message)) {
            // The core names the master by the address its agent gave; whether
            // this member can reach that address depends on where it connects
            // from, which only the shell knows.
            AssignmentMessage adjusted = *assigned;
            adjusted.assignment.master_addr = MasterAddrFor(assigned->assignment.master_addr,
                                                            session.peer_addr, session.local_addr);
            adjusted.epoch = ServingEpoch(replica_);
            session.channel->Send(adjusted);
          } else {
            session.channel->Send(send.message);
          }
        },
        [this](const SendFrameAction& frame) {
          if (auto it = sessions_.find(frame.conn); it != sessions_.end()) {
            it->second.channel->SendFrame(*frame.frame);
          }
        },
        [this](const StatusReplyAction& status) {
          auto it = sessions_.find(status.conn);
          if (it == sessions_.end()) return;
          if (!replica_.replicated) {
            it->second.channel->SendFrame(StatusReplyFrame(status.snapshot));
            return;
          }
          StatusSnapshot snapshot = status.snapshot;
          snapshot.replica = ReplicaSummaryNow();
          it->second.channel->SendFrame(StatusReplyFrame(snapshot));
        },
        [this](const CloseAction& close) {
          if (auto it = sessions_.find(close.conn); it != sessions_.end()) {
            it->second.channel->CloseAfterFlush("closed by the rendezvous");
          }
        },
        [this](const LogAction& log) {
          if (log.warning && !options_.inside_agent) {
            spdlog::warn("{}", log.line);
          } else {
            spdlog::info("{}", log.line);
          }
        });
  }
}

void RendezvousServer::Tick() {
  if (stopped_) return;
  const auto now = Clock::now();
  if (auto lapsed = LapsedLead(replica_, now)) {
    ApplyReplicaStatus(std::move(*lapsed), now, "the lease ran out before it was renewed");
  }
  if (last_tick_ && now - *last_tick_ > options_.settings.keep_alive_interval) {
    spdlog::warn("event=daemon_stalled ms={}",
                 std::chrono::duration_cast<std::chrono::milliseconds>(now - *last_tick_).count());
    Apply(core_->Handle(StallEvent{}, now));
  }
  last_tick_ = now;
  Apply(core_->Handle(TickEvent{}, now));
  PublishRunRecords();
  tick_timer_.expires_after(kTickInterval);
  tick_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) Tick();
  });
}

void RendezvousServer::Sweep() {
  if (stopped_) return;
  // Slow or silent peers: no Hello in time, or nothing at all for too long.
  const auto now = Clock::now();
  std::vector<std::shared_ptr<MessageChannel>> expired;
  for (auto& [conn, session] : sessions_) {
    if ((!session.greeted && now - session.opened > options_.settings.hello_timeout) ||
        now - session.channel->last_activity() > options_.settings.idle_timeout) {
      expired.push_back(session.channel);
    }
  }
  for (auto& channel : expired) channel->Close("timed out");
  sweep_timer_.expires_after(std::chrono::seconds(1));
  sweep_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) Sweep();
  });
}

void RendezvousServer::SetReplicaStatus(ReplicaStatus status) {
  ApplyReplicaStatus(std::move(status), Clock::now(), "this replica stepped down");
}

void RendezvousServer::ApplyReplicaStatus(ReplicaStatus status, Time now,
                                          const std::string& why_not_leading) {
  ReplicaStatus taken = TakeStatus(std::move(status), now);
  auto change = DecideLeadChange(replica_, taken, options_.settings, now, why_not_leading);
  replica_ = std::move(taken);
  if (change) {
    ++leader_changes_;
    recorded_ = change->takeover.records;
    DropEverything(std::move(*change));
  }
}

void RendezvousServer::DropEverything(LeadChange change) {
  spdlog::info("event=replica_role role={} epoch={} leader={} why=\"{}\" connections={}",
               replica::RoleName(replica_.role), replica_.epoch,
               replica_.leader.empty() ? "-" : replica_.leader, change.why, sessions_.size());
  std::vector<std::shared_ptr<MessageChannel>> open;
  for (auto& [conn, session] : sessions_) open.push_back(session.channel);
  // Forgotten before the closes come back: they find no run to report to.
  sessions_.clear();
  // The recent events outlive the runs: the status page shows the change of lead among them.
  std::shared_ptr<EventLog> events = core_->event_log();
  events->Add(DaemonEvent{Clock::now(), "lead_change", "", "",
                          std::string(replica::RoleName(replica_.role)) + " (epoch " +
                              std::to_string(replica_.epoch) + ", leader " +
                              (replica_.leader.empty() ? "unknown" : replica_.leader) +
                              "): " + change.why});
  core_ = std::make_unique<RendezvousCore>(change.settings, std::move(change.takeover));
  core_->set_event_log(std::move(events));
  for (auto& channel : open) channel->Close(change.why);
}

void RendezvousServer::PublishRunRecords() {
  if (!replica_.leading || !run_record_sink_) return;
  std::vector<RunRecord> changed;
  for (RunRecord& record : core_->Records()) {
    auto it = recorded_.find(record.run_id);
    if (it != recorded_.end() && it->second == record) continue;
    recorded_[record.run_id] = record;
    changed.push_back(std::move(record));
  }
  if (!changed.empty()) run_record_sink_(std::move(changed));
}

StatusSnapshot RendezvousServer::PageSnapshot() const {
  StatusSnapshot snapshot = core_->Status("", Clock::now());
  if (replica_.replicated) snapshot.replica = ReplicaSummaryNow();
  return snapshot;
}

ReplicaSummary RendezvousServer::ReplicaSummaryNow() const {
  return ReplicaSummary{replica_.self, std::string(replica::RoleName(replica_.role)),
                        replica_.epoch, replica_.leader, replica_.replicas};
}

std::string RendezvousServer::MetricsText() const {
  const auto t = core_->totals();
  std::ostringstream out;
  auto metric = [&out](const char* name, const char* type, const char* help, double value) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n"
        << name << " " << value << "\n";
  };
  metric("muster_runs", "gauge", "Runs known to the daemon.", static_cast<double>(t.runs));
  metric("muster_runs_running", "gauge", "Runs with a generation running.",
         static_cast<double>(t.runs_running));
  metric("muster_nodes", "gauge", "Nodes in current generations.", static_cast<double>(t.nodes));
  metric("muster_connections", "gauge", "Open agent connections.",
         static_cast<double>(sessions_.size()));
  metric("muster_generations_total", "counter", "Generations started.",
         static_cast<double>(t.generations));
  metric("muster_heartbeats_total", "counter", "Heartbeats received.",
         static_cast<double>(t.heartbeats));
  metric("muster_dead_nodes_total", "counter", "Nodes detected dead (disconnect or silence).",
         static_cast<double>(t.dead_nodes));
  metric("muster_round_seconds_total", "counter",
         "Seconds from a round opening (start, fault) to its generation starting.",
         t.round_seconds_total);
  metric("muster_refused_hellos_total", "counter", "Connections refused at Hello.",
         static_cast<double>(bad_hellos_));
  metric("muster_rejected_connections_total", "counter", "Connections over the limit.",
         static_cast<double>(rejected_));
  metric("muster_tls_refused_total", "counter",
         "Connections TLS refused (certificate, plain text, protocol).",
         static_cast<double>(tls_failures_));
  out << "# HELP muster_replica_role This daemon's role (1 for the current one).\n"
      << "# TYPE muster_replica_role gauge\n";
  for (const replica::Role role : replica::kRoles) {
    out << "muster_replica_role{role=\"" << replica::RoleName(role) << "\"} "
        << (replica_.role == role ? 1 : 0) << "\n";
  }
  metric("muster_replica_epoch", "gauge", "The epoch of the leader this replica knows (0: none).",
         static_cast<double>(replica_.epoch));
  metric("muster_replica_leader_changes_total", "counter",
         "Times this replica took or lost the lead.", static_cast<double>(leader_changes_));
  std::string text = out.str();
  AppendRunMetrics(core_->Status("", Clock::now()), RunMetricsOptions{options_.node_metrics}, text);
  return text;
}

void RendezvousServer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  boost::system::error_code ec;
  acceptor_.close(ec);
  accept_retry_.Cancel();
  tick_timer_.cancel();
  sweep_timer_.cancel();
  std::vector<std::shared_ptr<MessageChannel>> channels;
  for (auto& [conn, session] : sessions_) channels.push_back(session.channel);
  for (auto& channel : channels) channel->Close("daemon stopping");
  sessions_.clear();
}

}  // namespace muster::rdzv
