// RendezvousServer: the daemon shell around RendezvousCore. It accepts agent
// connections, answers each one's Hello as the hello gate decides
// (rendezvous/state/hello_gate.h: protocol version, shared token, a replica
// that does not serve), turns decoded messages into events, carries out the
// core's actions, and ticks the core every kTickInterval so deadlines (dead
// nodes, last call) are met. A replica's changes of role are carried out as
// rendezvous/state/lead_change.h decides them.
//
// It runs on the caller's io_context and starts no thread: the same server is
// `musterd`, and is embedded in `muster --standalone` / `is_host=1` agents.
// Bad input on one connection closes that connection only; so does a TLS
// failure, logged as one event line naming the peer and the reason. Assignments are
// adjusted per member on the way out: a loopback master address is replaced,
// for members on other hosts, by the address they reached the daemon at
// (PROTOCOL.md, "Loopback master addresses").
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/accept_retry.h"
#include "common/status.h"
#include "rendezvous/net/message_channel.h"
#include "rendezvous/state/lead_change.h"
#include "rendezvous/state/rendezvous_core.h"
#include "rendezvous/state/replica_status.h"

namespace muster::rdzv {

struct ServerOptions {
  std::string host = "0.0.0.0";
  uint16_t port = 0;  // 0: any free port
  Settings settings;
  std::string token;  // empty: no token required
  // Serve TLS with it (a server context, tls_context.h); null: plain TCP.
  // With a client CA, every agent and `muster status` must present a
  // certificate that chains to it.
  std::shared_ptr<const TlsContext> tls;
  size_t max_connections = 20000;
  // Each agent's connection; its first frame, the Hello, is held to
  // kMaxHelloFrameBytes.
  MessageChannel::Limits limits{.max_first_frame_bytes = kMaxHelloFrameBytes};
  // Served by an agent for its own job (--standalone, is_host): each agent
  // reports a worker failure and the run's end itself, once, so the
  // daemon's warnings (which say the same) are logged at info.
  bool inside_agent = false;
  // /metrics: per-node series for runs of at most this many nodes (0: none).
  int node_metrics = 0;
};

class RendezvousServer {
 public:
  // Deadlines are checked this often: well inside disconnect_grace (0.15 s).
  // A tick is cheap at 10,000 nodes: a run scans its nodes only once the
  // earliest node deadline has come (NodeTable::FindDead).
  static constexpr Duration kTickInterval{50};

  // Binds host:port and starts serving. The error quotes host and port; it
  // is FailedPrecondition when the port is in use (another daemon, or an
  // agent that serves the rendezvous, listens there), IoError or
  // InvalidArgument otherwise.
  static Result<std::unique_ptr<RendezvousServer>> Start(boost::asio::io_context& io,
                                                         ServerOptions options);
  ~RendezvousServer();
  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;

  uint16_t port() const { return port_; }
  // Failed accepts the listener waited after (out of descriptors:
  // common/accept_retry.h), since Start.
  uint64_t accept_pauses() const { return accept_retry_.pauses(); }
  // Prometheus text exposition of the daemon's counters.
  std::string MetricsText() const;
  // Every run, the recent events and, for a replica, who leads, as the
  // status page (status_page_json.h) shows them now.
  StatusSnapshot PageSnapshot() const;

  // A replica's role changed (replica_status.h). Taking the lead, or losing
  // it, closes every connection and forgets every run: a new leader rebuilds
  // the runs from the agents' reports as a restarted daemon does.
  void SetReplicaStatus(ReplicaStatus status);
  const ReplicaStatus& replica_status() const { return replica_; }
  // A replica's leader hands every changed run record here (RunRecord), from
  // the io_context's thread; the replica writes them to etcd.
  void SetRunRecordSink(std::function<void(std::vector<RunRecord>)> sink) {
    run_record_sink_ = std::move(sink);
  }
  void Stop();

 private:
  // Who answers and who leads, for both status documents (replicas only).
  ReplicaSummary ReplicaSummaryNow() const;
  struct Session {
    std::shared_ptr<MessageChannel> channel;
    bool greeted = false;
    Time opened;
    // The connection's two ends: where the agent connects from, and the
    // daemon's address it reached (told to agents on other hosts in place of
    // a loopback master address: advertised_address.h).
    std::string peer_addr;
    std::string local_addr;
  };

  RendezvousServer(boost::asio::io_context& io, ServerOptions options);
  void Accept();
  void OnMessage(ConnId conn, Message message);
  void OnClosed(ConnId conn, const std::string& why, ChannelEnd end);
  void Apply(const Actions& actions);
  void Tick();
  void Sweep();
  // A heartbeat frame in its plain form; false sends it down the general path.
  bool OnHeartbeatFrame(ConnId conn, std::string_view payload);
  // Takes `status` (TakeStatus); a change of lead (DecideLeadChange) drops
  // everything, logged with `why_not_leading` when it is lost.
  void ApplyReplicaStatus(ReplicaStatus status, Time now, const std::string& why_not_leading);
  // Closes every connection and forgets every run; the runs start again in a
  // new core with the change's settings and takeover.
  void DropEverything(LeadChange change);
  // Leading: hands the runs' records that changed to the sink; once a tick
  // (50 ms), not per message.
  void PublishRunRecords();

  boost::asio::io_context& io_;
  ServerOptions options_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer tick_timer_;
  boost::asio::steady_timer sweep_timer_;
  AcceptRetry accept_retry_;  // paces accepts after a failure (out of descriptors)
  std::unique_ptr<RendezvousCore> core_;
  ReplicaStatus replica_;
  std::function<void(std::vector<RunRecord>)> run_record_sink_;
  std::map<std::string, RunRecord, std::less<>> recorded_;  // as last handed to the sink
  uint64_t leader_changes_ = 0;
  // Looked up for every heartbeat; nothing depends on its order.
  std::unordered_map<ConnId, Session> sessions_;
  ConnId next_conn_ = 1;
  uint16_t port_ = 0;
  std::string daemon_id_;
  uint64_t rejected_ = 0;
  std::optional<Time> last_tick_;
  Actions heartbeat_actions_;
  uint64_t bad_hellos_ = 0;
  uint64_t tls_failures_ = 0;  // connections TLS refused (certificate, plain text, protocol)
  bool stopped_ = false;
};

}  // namespace muster::rdzv
