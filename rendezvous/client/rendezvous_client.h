// RendezvousClient: the agent's side of the rendezvous protocol. It connects
// (and reconnects with jittered backoff), says Hello, joins the run — with
// the assignment its workers currently run under, so a restarted daemon can
// rebuild the run — heart-beats, and reports worker outcomes. What the
// daemon decides arrives through Callbacks.
//
// Self-fencing (PROTOCOL.md, "Daemon restart and self-fencing"): when nothing
// has come from the daemon for fence_timeout, on_fence() asks the agent to
// stop its workers, unless every attempt since the daemon went quiet ended in
// "connection refused" or a closed connection — proof that the daemon's host
// is reachable and no daemon runs there, so no new generation can be formed
// behind this agent's back.
//
// Replicas (PROTOCOL.md, "Replicas"): with several endpoints, the client
// walks them (endpoint_walk.h), follows a standby's not_leader to the leader,
// probes the other replicas while a served connection has gone quiet (never
// closing it itself: the leader would count that as this node's death), and
// fences by the replicated rule (fence_rule.h): a current standby answer that
// names no newer leader keeps the workers up to failover_timeout but is never
// contact. It remembers the
// highest leader epoch it has seen and refuses a Welcome or an assignment
// from an older one: a deposed leader that has not noticed yet.
//
// Runs on the caller's io_context; not thread-safe.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "rendezvous/client/contact_wait.h"
#include "rendezvous/client/endpoint_walk.h"
#include "rendezvous/client/fence_rule.h"
#include "rendezvous/client/outcome_report.h"
#include "rendezvous/net/message_channel.h"
#include "rendezvous/state/settings.h"

namespace muster::rdzv {

struct ClientOptions {
  std::vector<Endpoint> endpoints;  // --rdzv-endpoint, in order; at least one
  std::string token;
  Join join;  // run_id, node_id, host, sizes, store port; store_addr "" = local address of the
              // connection
  Settings settings;
};

class RendezvousClient {
 public:
  struct Callbacks {
    std::function<void(const Assignment&)> on_assignment;
    std::function<void(const std::string& reason)> on_waiting;
    std::function<void(bool succeeded, const std::string& message)> on_run_ended;
    std::function<void(const std::string& message)> on_fatal;  // refused for good (token, version)
    std::function<void(const std::string& why)> on_fence;      // stop the workers now
  };

  RendezvousClient(boost::asio::io_context& io, ClientOptions options, Callbacks callbacks);
  ~RendezvousClient();
  RendezvousClient(const RendezvousClient&) = delete;
  RendezvousClient& operator=(const RendezvousClient&) = delete;

  void Start();
  void Stop();
  // The highest leader epoch heard of (0: not replicated, or none yet).
  uint64_t epoch() const { return epoch_seen_; }
  // The assignment the workers run under now (nullopt: none running). When
  // workers that ran stop, a heartbeat tells the daemon at once (draining).
  void SetCurrent(std::optional<Assignment> current);
  // Outcome reports are kept: the last one is sent again after every Join on
  // a reconnect, until an assignment of a newer generation arrives.
  void ReportWorkerFailure(uint64_t generation, int exit_code, const std::string& message);
  void ReportSucceeded(uint64_t generation);
  void Leave();

  // Fault injection (common/fault_spec.h). SuspendTraffic: for `duration`
  // nothing is sent, what arrives is ignored and no connection is attempted,
  // as if the network between this agent and the daemon were cut; the fence
  // timer runs on. DelayHeartbeats: for `window`, each heartbeat leaves
  // `delay` after its time.
  void SuspendTraffic(std::chrono::milliseconds duration);
  void DelayHeartbeats(std::chrono::milliseconds delay, std::chrono::milliseconds window);

 private:
  // One attempt at the walk's current endpoint (none while one is under way).
  void Connect();
  // An attempt that ended without contact: logged, and fed to contact_wait_,
  // which may warn.
  void AttemptFailed(const Endpoint& endpoint, std::string cause);
  // The attempt's connection: Hello, Join and the kept report go at once.
  void OnConnected(boost::asio::ip::tcp::socket socket);
  // How long a connect, or a Hello, may go unanswered.
  std::chrono::milliseconds AttemptDeadline() const;
  // When the fence is decided next while its clock runs for replicas
  // (nullopt: it does not): attempts share the time left (AttemptBound).
  std::optional<std::chrono::steady_clock::time_point> FenceCheck(
      std::chrono::steady_clock::time_point now) const;
  // Routes a message to the attempt's handler or the served one's; a
  // connection replaced since is ignored.
  void OnChannelMessage(const MessageChannel* from, const Message& message);
  // Before a Welcome: a standby's answer, a stale leader, or a leader whose
  // Welcome makes the attempt the connection served (adopted).
  void OnAttemptMessage(const Message& message);
  // The connection served: contact.
  void OnMessage(const Message& message);
  void OnChannelClosed(const MessageChannel* which, const std::string& why, bool daemon_gone);
  // A refusal for good (a bad token or version, or fatal): stops the client
  // and says so through on_fatal; false for any other error.
  bool RefusedForGood(const Error& error);
  // A standby refused this agent: remember its answer for the walk and the
  // fence rule, and leave the attempt (OnChannelClosed follows at once).
  void OnStandbyAnswer(const Error& error);
  // The next attempt, `delay` from now.
  void ScheduleReconnect(std::chrono::milliseconds delay);
  double UnitRandom();
  // The walk, its decisions made at the present time.
  EndpointWalk& WalkNow() { return walk_.At(std::chrono::steady_clock::now()); }
  // Replicated: a served connection silent past a missed ack (QuietAfter)
  // starts probing: attempts at the other replicas while it stays open, so a
  // new leader is found, and the replicas' answers keep the workers, before
  // the fence decides; a Welcome adopts the attempt, a word from the leader
  // stops the probe.
  void ArmQuietTimer();
  std::chrono::milliseconds QuietAfter() const;
  void StartProbing();
  bool Suspended() const { return std::chrono::steady_clock::now() < suspended_until_; }
  void Heartbeat();
  // What this agent heartbeats: the generation its workers run, 0 for none.
  rdzv::Heartbeat MakeHeartbeat() const;
  // One heartbeat now, outside the periodic ones.
  void SendHeartbeat();
  void ArmFenceTimer(std::chrono::steady_clock::time_point when);
  void Send(const Message& message);
  // Join as this agent is now: its store address, and the assignment its
  // workers run under (so a restarted daemon can rebuild the run).
  Join MakeJoin() const;

  boost::asio::io_context& io_;
  ClientOptions options_;
  Callbacks callbacks_;
  std::shared_ptr<MessageChannel> channel_;  // the connection served (after a Welcome)
  std::shared_ptr<MessageChannel> attempt_;  // one being greeted, or a probe
  std::string attempt_local_addr_;
  std::chrono::milliseconds attempt_bound_{0};  // the connect's deadline
  // Set when the fence clock cut the attempt short: the Hello's answer is due
  // by then too.
  std::optional<std::chrono::steady_clock::time_point> fence_cutoff_;
  bool connecting_ = false;  // a resolve or connect is under way
  bool probing_ = false;     // attempts while the served connection is quiet
  boost::asio::steady_timer heartbeat_timer_;
  boost::asio::steady_timer reconnect_timer_;
  boost::asio::steady_timer connect_deadline_;
  boost::asio::steady_timer fence_timer_;
  boost::asio::steady_timer quiet_timer_;
  boost::asio::steady_timer greet_deadline_;
  boost::asio::steady_timer contact_timer_;  // ends a first contact that never comes
  std::optional<Assignment> current_;
  OutcomeReport last_report_;
  std::string local_addr_;
  std::chrono::steady_clock::time_point last_contact_;
  ContactFailure latest_failure_ = ContactFailure::kNone;  // since the last message
  // The wait for the first Welcome, bounded by read_timeout and join_timeout.
  std::optional<ContactWait> contact_wait_;  // set by Start()
  bool lost_ = false;                        // the connection served was lost and not yet replaced
  bool fenced_ = false;
  bool stopped_ = false;
  EndpointWalk walk_;
  bool replicated_ = false;  // several endpoints, or a replica said so
  // When a replica last answered without serving, with evidence that no
  // leader took over since (a current standby answer naming no leader or the
  // one that served, the leader closing the connection served); reset by a
  // Welcome.
  std::optional<std::chrono::steady_clock::time_point> last_answer_;
  uint64_t epoch_seen_ = 0;
  uint64_t served_epoch_ = 0;      // the epoch of the leader whose Welcome was adopted last
  uint64_t highest_assigned_ = 0;  // Join.last_generation
  // The standby's answer on the attempt now closing, read by OnChannelClosed
  // (which also takes its epoch into epoch_seen_).
  std::optional<Error> standby_answer_;
  std::mt19937_64 random_;
  std::chrono::steady_clock::time_point suspended_until_{};
  std::chrono::steady_clock::time_point delayed_until_{};
  std::chrono::milliseconds heartbeat_delay_{0};
  std::vector<std::shared_ptr<boost::asio::steady_timer>> delayed_heartbeats_;
};

}  // namespace muster::rdzv
