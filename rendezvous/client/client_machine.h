// ClientMachine: the agent's side of the rendezvous protocol as a pure
// decision object. RendezvousClient (rendezvous_client.h) feeds it what its
// sockets and timers report (events, each carrying `now`) and carries out
// what it returns (actions), in order; nothing here touches a socket, a
// timer or a clock. Tests: tests/unit/rdzv_client_machine_test.cc and, with
// real daemons' cores, tests/unit/rdzv_client_failover_test.cc.
//
// What it does: connects (the walk over replicas, endpoint_walk.h), says
// Hello and joins the run with the assignment its workers run under (so a
// restarted or new leader can rebuild the run), heart-beats, reports worker
// outcomes (kept and repeated after every Join: outcome_report.h), follows a
// standby's not_leader to the leader, probes the other replicas while a
// served connection has gone quiet (never closing it itself: the leader
// would count that as this node's death), and fences by the rule of
// fence_rule.h, by the timing of the daemon that welcomed it
// (timing_agreement.h: one warning names each value that differs from its
// own --rdzv-conf). It remembers the highest leader epoch it has seen and
// refuses a Welcome or an assignment from an older one: a deposed leader
// that has not noticed yet.
//
// States (state()) and every change between them: client_transitions.h
// (kClientTransitions, checked at each change). What happens within a state:
//
// clang-format off
//   Start ------------------------------------------> ConnectTo, arm kFirstContact, kHeartbeat,
//                                                     kFence
//   ConnectFailed / kAttempt / attempt closed -------> the walk moves on: arm kRetry (not while
//                                                     served and not probing)
//   attempt: a standby's not_leader or no_leader ---> CloseLink; the walk follows the named
//                                                     leader or moves on: arm kRetry
//   served: any message ----------------------------> contact: arm kFence, kQuiet
//   served: Assignment (epoch not older) -----------> DeliverAssignment
//   served: Waiting / RunEnded ---------------------> DeliverWaiting / DeliverRunEnded
//   served: unknown_node, unknown_run --------------> SendTo Join again
//   kRetry -----------------------------------------> ConnectTo the walk's current endpoint
//   kFence: fence_rule.h decides -------------------> wait: arm kFence again; fence:
//                                                     FenceWorkers
//   kHeartbeat -------------------------------------> SendTo Heartbeat (when served); arm again
// clang-format on
//
// While the fence clock runs (replicas, contact lost or quiet), one attempt
// takes at most its share of the time left before the fence decides
// (AttemptBound, fence_rule.h): a slow endpoint cannot use up the time a
// healthy standby behind it needs to answer (PROTOCOL.md).
//
// Not thread-safe: the shell calls it from one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "common/clock.h"
#include "rendezvous/client/client_transitions.h"
#include "rendezvous/client/contact_wait.h"
#include "rendezvous/client/endpoint_walk.h"
#include "rendezvous/client/fence_rule.h"
#include "rendezvous/client/outcome_report.h"
#include "rendezvous/net/channel_end.h"
#include "rendezvous/protocol/messages.h"
#include "rendezvous/state/settings.h"

namespace muster::rdzv {

struct ClientOptions {
  std::vector<Endpoint> endpoints;  // --rdzv-endpoint, in order; at least one
  std::string token;
  Join join;  // run_id, node_id, host, sizes, store port; store_addr "" = local address of the
              // connection
  Settings settings;
};

// One connection the machine asked for: an attempt keeps its id once its
// Welcome makes it the link served.
using LinkId = uint64_t;

// The machine's timers; each is armed at one time or not at all.
enum class ClientTimer {
  kHeartbeat,     // the next heartbeat
  kRetry,         // the next attempt
  kAttempt,       // the attempt under way gives up
  kFence,         // the fence rule decides again
  kQuiet,         // a served leader has been quiet past a missed ack
  kFirstContact,  // the wait for a first Welcome fails
};
inline constexpr ClientTimer kClientTimers[] = {
    ClientTimer::kHeartbeat, ClientTimer::kRetry, ClientTimer::kAttempt,
    ClientTimer::kFence,     ClientTimer::kQuiet, ClientTimer::kFirstContact};

// How a connect failed.
enum class ConnectError {
  kRefused,    // refused: the host answers, no daemon listens there
  kSilent,     // no answer: unreachable, reset, or timed out
  kNotTried,   // never reached the network: no such host, or traffic is cut
  kTlsFailed,  // the host answered, and TLS refused: a certificate, a name, plain text
};

// Open a connection to `endpoint`; Connected or ConnectFailed follows for
// `link`, unless CloseLink comes first.
struct ConnectTo {
  LinkId link = 0;
  Endpoint endpoint;
};
// Send `message` on `link` if it is open; dropped otherwise.
struct SendTo {
  LinkId link = 0;
  Message message;
};
// Close `link` (or give up its connect); no event follows for it.
struct CloseLink {
  LinkId link = 0;
  std::string why;
};
// Call OnTimer(timer) at `at`, replacing the time it was armed at.
struct ArmTimer {
  ClientTimer timer = ClientTimer::kHeartbeat;
  Time at;
};
struct CancelTimer {
  ClientTimer timer = ClientTimer::kHeartbeat;
};
// Hand the agent what the daemon decided (Callbacks of rendezvous_client.h).
struct DeliverAssignment {
  Assignment assignment;
  // AssignmentMessage::member_addrs: the master's only, else empty.
  std::vector<std::string> member_addrs{};
};
struct DeliverWaiting {
  std::string reason;
};
struct DeliverRunEnded {
  bool succeeded = false;
  std::string message;
};
// Stop the workers now: this agent may have been left behind.
struct FenceWorkers {
  std::string why;
};
// The rendezvous cannot be reached, or refused this agent for good: the
// machine has stopped.
struct GiveUp {
  std::string message;
};
// One log line, at the level a user reading that kind of line needs.
struct ClientLog {
  enum class Level { kDebug, kInfo, kWarn };
  Level level = Level::kDebug;
  std::string line;
};

using ClientAction =
    std::variant<ConnectTo, SendTo, CloseLink, ArmTimer, CancelTimer, DeliverAssignment,
                 DeliverWaiting, DeliverRunEnded, FenceWorkers, GiveUp, ClientLog>;
using ClientActions = std::vector<ClientAction>;

class ClientMachine {
 public:
  using State = ClientState;  // client_transitions.h

  // `seed` drives the backoff's jitter.
  ClientMachine(ClientOptions options, uint64_t seed);

  // The settings it acts on: options' until a Welcome's timing replaces
  // theirs (timing_agreement.h).
  const Settings& settings() const { return options_.settings; }
  // The silence after which this agent fences (fence_rule.h): fence_timeout,
  // failover_timeout with replicas; the Welcome's timing once welcomed.
  std::chrono::milliseconds FenceAfter() const {
    return replicated_ ? options_.settings.failover_timeout : options_.settings.fence_timeout;
  }

  // Begins the wait for a first contact, and the first attempt. With no
  // endpoint: kStopped and GiveUp.
  ClientActions Start(Time now);
  // Closes everything; no action follows any later event.
  ClientActions Stop();

  // What the links report.
  ClientActions OnConnected(LinkId link, const std::string& local_addr, Time now);
  ClientActions OnConnectFailed(LinkId link, ConnectError error, const std::string& cause,
                                Time now);
  ClientActions OnMessage(LinkId link, const Message& message, Time now);
  // The peer or the network closed `link` (ChannelEnd::kPeerGone: the
  // peer's side closed it, so its host answered; kTlsFailed: TLS refused
  // this agent, as when the daemon wants a client certificate it lacks).
  ClientActions OnClosed(LinkId link, const std::string& why, ChannelEnd end, Time now);
  ClientActions OnTimer(ClientTimer timer, Time now);

  // What the agent says. The assignment its workers run under now (nullopt:
  // none); when workers that ran stop, a heartbeat tells the daemon at once
  // (a draining daemon waits for it).
  ClientActions SetCurrent(std::optional<Assignment> current);
  // The node's progress in the current generation (Heartbeat::step): the
  // next heartbeats carry it; nothing is sent now. Forgotten when the
  // current assignment changes generation or ends (0: none).
  void SetProgress(uint64_t step);
  // The node's workers' compute times (Heartbeat::compute_us): the next
  // heartbeat carries them once; forgotten as SetProgress's step is.
  void SetCompute(std::vector<uint64_t> compute_us);
  // Outcome reports are kept: the last one is sent again after every Join
  // on a new connection, until an assignment of a newer generation arrives.
  ClientActions ReportWorkerFailure(uint64_t generation, int exit_code, const std::string& message);
  ClientActions ReportSucceeded(uint64_t generation);
  ClientActions Leave();

  State state() const { return state_; }
  // The last change of state (nullopt before the first), and the first one
  // kClientTransitions does not list (nullopt unless the machine has a bug):
  // tests check both.
  const std::optional<ClientTransition>& last_transition() const { return last_transition_; }
  const std::optional<ClientTransition>& stray_transition() const { return stray_transition_; }
  // The highest leader epoch heard of (0: not replicated, or none yet, or
  // fenced since).
  uint64_t epoch() const { return epoch_seen_; }
  const std::optional<Assignment>& current() const { return current_; }
  // When a leader serving this agent last sent it anything (a Welcome, a
  // heartbeat's answer, a Waiting, an assignment); nullopt before the first
  // Welcome. The agent's health endpoint judges contact by it
  // (launcher/decide/health_verdict.h).
  std::optional<Time> last_heard() const { return last_heard_; }
  // The walk over the replicas (which endpoints are suspect).
  const EndpointWalk& walk() const { return walk_; }

 private:
  struct Link {
    LinkId id = 0;
    Endpoint endpoint;
    std::string local_addr;
    bool open = false;  // connected (an attempt: greeting)
  };

  // Moves to `to`, checking the change against kClientTransitions (a
  // change it lacks is logged and kept: stray_transition()).
  void Enter(ClientTrigger trigger, State to, ClientActions& out);
  bool stopped() const { return state_ == State::kStopped; }
  // Stop() for `trigger` (kStop, kGiveUp): cancels every timer, closes every
  // link. Nothing when already stopped.
  ClientActions Halt(ClientTrigger trigger);
  void Connect(Time now, ClientActions& out);
  void ScheduleRetry(std::chrono::milliseconds delay, Time now, ClientActions& out);
  // The attempt ended without serving (`why`; `refused`: its peer closed it
  // or refused it): the walk moves on, and the next attempt is armed unless
  // a leader still serves and is not being probed.
  // Closes the attempt (`why`), notes the failure (`cause`, or `why` when
  // empty) and schedules the next attempt unless a leader still serves.
  void AttemptFailed(const std::string& why, bool refused, Time now, ClientActions& out,
                     const std::string& cause = "");
  // Logs the failure and feeds the first-contact wait, which may warn.
  void NoteFailure(const Endpoint& endpoint, const std::string& cause, Time now,
                   ClientActions& out);
  // Closes the attempt; `trigger` moves kGreeting to kConnecting.
  void CloseAttempt(const std::string& why, ClientTrigger trigger, ClientActions& out);
  void OnAttemptMessage(const Message& message, Time now, ClientActions& out);
  // `welcome` is `message`: adopted unless its leader's epoch is older.
  void OnAttemptWelcome(const Welcome& welcome, const Message& message, Time now,
                        ClientActions& out);
  void OnStandbyAnswer(const Error& error, Time now, ClientActions& out);
  // Takes `timing` (a Welcome's) for the settings acted on; false when it
  // breaks the fence rule, and the machine has stopped and given up.
  bool AdoptTiming(const DaemonTiming& timing, Time now, ClientActions& out);
  void OnServedMessage(const Message& message, Time now, ClientActions& out);
  void OnServedLost(const std::string& why, bool peer_gone, Time now, ClientActions& out);
  // TLS refused this agent at `where`: no endpoint will take it until its
  // files change, so it stops, saying why.
  void RefusedTls(const std::string& where, const std::string& why, ClientActions& out);
  // A refusal for good (a bad token or version, or fatal): stops and gives
  // up; false for any other error.
  bool RefusedForGood(const Error& error, ClientActions& out);
  void StartProbing(Time now, ClientActions& out);
  void DecideFence(Time now, ClientActions& out);
  void Send(const Message& message, ClientActions& out) const;
  Join MakeJoin() const;
  Heartbeat MakeHeartbeat() const;
  // How long a connect, or a Hello, may go unanswered (without the fence).
  std::chrono::milliseconds AttemptDeadline() const;
  // When the fence is decided next while its clock runs for replicas
  // (nullopt: it does not).
  std::optional<Time> FenceCheck(Time now) const;
  std::chrono::milliseconds QuietAfter() const;
  double UnitRandom();
  // The walk, its decisions made at `now`.
  EndpointWalk& WalkAt(Time now) { return walk_.At(now); }

  ClientOptions options_;  // .settings: with the adopted timing
  Settings configured_;    // options' settings as given (the agent's --rdzv-conf)
  std::optional<DaemonTiming> adopted_timing_;  // the last Welcome's
  std::mt19937_64 random_;
  EndpointWalk walk_;
  std::optional<ContactWait> contact_wait_;  // set by Start()
  OutcomeReport last_report_;
  std::optional<Assignment> current_;
  uint64_t step_ = 0;                 // SetProgress(), for current_'s generation
  std::vector<uint64_t> compute_us_;  // SetCompute(), until a heartbeat carries it
  LinkId next_link_ = 1;
  std::optional<Link> served_;   // the leader's connection (after its Welcome)
  std::optional<Link> attempt_;  // one being connected or greeted, or a probe
  std::string local_addr_;       // the local address of the link served last
  State state_ = State::kConnecting;
  std::optional<ClientTransition> last_transition_;
  std::optional<ClientTransition> stray_transition_;
  // The fence fired and no Welcome came since. Beside kFenced, a link still
  // served (a quiet leader, kServed or kProbing) may be fenced too.
  bool fenced_ = false;
  // The link served was lost and not yet replaced: a Welcome is a reconnect,
  // which kConnecting and kGreeting alone do not tell from a first contact.
  bool lost_ = false;
  bool replicated_ = false;  // several endpoints, or a replica said so
  Time last_contact_{};
  std::optional<Time> last_heard_;                         // last_contact_, once a leader was heard
  ContactFailure latest_failure_ = ContactFailure::kNone;  // since the last message
  // When a replica last answered without serving, with evidence that no
  // leader took over since (fence_rule.h, R2); reset by a Welcome.
  std::optional<Time> last_answer_;
  uint64_t epoch_seen_ = 0;
  uint64_t served_epoch_ = 0;      // the epoch of the leader whose Welcome was adopted last
  uint64_t highest_assigned_ = 0;  // Join.last_generation
  // The attempt's bound, and when the fence clock cut it short: the Hello's
  // answer is due by then too.
  std::chrono::milliseconds attempt_bound_{0};
  Time attempt_deadline_{};  // when the attempt under way gives up (kAttempt)
  std::optional<Time> fence_cutoff_;
};

}  // namespace muster::rdzv
