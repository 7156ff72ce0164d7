// ClientMachine (rendezvous/client/client_machine.h): one test per rule of
// its transition table, named for the rule. Events in, actions out, printed
// as lines ("connect 10.0.0.2:29400 #2", "arm attempt @+917ms"), with times
// counted from the test's start on a hand-driven clock.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "rendezvous/client/client_machine.h"
#include "rendezvous/state/hello_gate.h"
#include "tests/unit/rdzv_client_test_support.h"

namespace muster::rdzv {
namespace {

using namespace std::chrono_literals;
using testing::Lines;
using testing::Only;
using State = ClientMachine::State;

const Endpoint kA{"10.0.0.1", 29400};
const Endpoint kB{"10.0.0.2", 29400};
const Endpoint kC{"10.0.0.3", 29400};

// A daemon's Welcome, with the default timing (the agent's own here).
Welcome DaemonWelcome(uint64_t epoch = 0) {
  return Welcome{kProtocolVersion, "d", epoch, TimingOf(Settings{})};
}

// One agent's client on a hand-driven clock.
class Client {
 public:
  explicit Client(std::vector<Endpoint> endpoints) : machine_(Options(std::move(endpoints)), 1) {}

  static ClientOptions Options(std::vector<Endpoint> endpoints) {
    ClientOptions options;
    options.endpoints = std::move(endpoints);
    options.join.run_id = "r";
    options.join.node_id = "n1";
    return options;
  }

  void AdvanceTo(std::chrono::milliseconds since_start) { now_ = kStart + since_start; }
  Time now() const { return now_; }
  Lines Start() { return Show(machine_.Start(now_)); }
  Lines Connected(LinkId link) { return Show(machine_.OnConnected(link, "10.0.0.9", now_)); }
  Lines ConnectFailed(LinkId link, ConnectError error) {
    return Show(machine_.OnConnectFailed(link, error, "test", now_));
  }
  Lines Receive(LinkId link, const Message& message) {
    return Show(machine_.OnMessage(link, message, now_));
  }
  Lines Closed(LinkId link, bool peer_gone) {
    return Show(machine_.OnClosed(link, "test",
                                  peer_gone ? ChannelEnd::kPeerGone : ChannelEnd::kLocal, now_));
  }
  Lines ClosedByTls(LinkId link, const std::string& why) {
    return Show(machine_.OnClosed(link, why, ChannelEnd::kTlsFailed, now_));
  }
  Lines Fire(ClientTimer timer) { return Show(machine_.OnTimer(timer, now_)); }
  // Connected and welcomed by the leader of `epoch` on `link`.
  void Serve(LinkId link, uint64_t epoch) {
    Connected(link);
    Receive(link, DaemonWelcome(epoch));
    REQUIRE(machine_.state() == State::kServed);
  }
  ClientMachine& machine() { return machine_; }
  Lines Show(const ClientActions& actions) const { return testing::Show(actions, kStart); }

 private:
  static constexpr Time kStart{std::chrono::seconds(100)};
  ClientMachine machine_;
  Time now_ = kStart;
};

Error NotLeader(const Endpoint& leader, uint64_t epoch) {
  Error e{ErrorCode::kNotLeader, "not the leader", false};
  e.leader = leader.Text();
  e.epoch = epoch;
  e.current = true;
  return e;
}

Error NoLeader() {
  Error e{ErrorCode::kNoLeader, "no leader is elected yet", false};
  e.current = true;
  return e;
}

AssignmentMessage AssignmentOf(uint64_t generation, uint64_t epoch) {
  AssignmentMessage m;
  m.assignment.run_id = "r";
  m.assignment.generation = generation;
  m.epoch = epoch;
  return m;
}

TEST_CASE("a daemon's Welcome makes the attempt the connection served", "[rdzv][client][machine]") {
  Client c({kA});
  CHECK(Only(c.Start(), {"connect", "arm attempt", "arm fence", "arm heartbeat"}) ==
        Lines{"connect 10.0.0.1:29400 #1", "arm attempt @+2000ms", "arm heartbeat @+500ms",
              "arm fence @+1000ms"});
  CHECK(c.machine().state() == State::kConnecting);
  CHECK(c.Connected(1) == Lines{"send #1 Hello", "send #1 Join", "arm attempt @+2000ms"});
  CHECK(c.machine().state() == State::kGreeting);
  c.AdvanceTo(10ms);
  CHECK(c.Receive(1, DaemonWelcome()) ==
        Lines{"cancel attempt", "arm fence @+1010ms", "cancel first-contact"});
  CHECK(c.machine().state() == State::kServed);
  CHECK(c.Receive(1, AssignmentOf(1, 0)) ==
        Lines{"arm fence @+1010ms", "deliver assignment gen=1"});
  c.AdvanceTo(500ms);
  CHECK(c.Fire(ClientTimer::kHeartbeat) ==
        Lines{"send #1 Heartbeat gen=0", "arm heartbeat @+1000ms"});
}

TEST_CASE("a standby's not_leader sends the next attempt to the leader it names",
          "[rdzv][client][machine]") {
  Client c({kA, kB, kC});
  c.Start();
  c.Connected(1);
  CHECK(c.Receive(1, NotLeader(kB, 3)) == Lines{"cancel attempt", "close #1", "arm retry @+0ms"});
  CHECK(c.machine().epoch() == 3);
  CHECK(Only(c.Fire(ClientTimer::kRetry), {"connect"}) == Lines{"connect 10.0.0.2:29400 #2"});
}

// Served by A (epoch 1) from the start, then quiet past a missed ack:
// max(1.5 x 500 ms, 1000 ms / 3 + 500 ms) = 833 ms. Returns kQuiet's lines.
Lines ServedThenQuiet(Client& c) {
  c.Start();
  c.Serve(1, 1);
  c.AdvanceTo(833ms);
  return c.Fire(ClientTimer::kQuiet);
}

TEST_CASE("a quiet leader is probed beside its open connection until it is heard again",
          "[rdzv][client][machine]") {
  Client c({kA, kB, kC});
  CHECK(ServedThenQuiet(c) == Lines{"arm retry @+833ms"});
  CHECK(c.machine().state() == State::kProbing);
  CHECK(Only(c.Fire(ClientTimer::kRetry), {"connect", "close"}) ==
        Lines{"connect 10.0.0.2:29400 #2"});  // #1 stays open
  c.AdvanceTo(850ms);
  CHECK(Only(c.Receive(1, HeartbeatAck{}), {"close", "arm retry"}) == Lines{"close #2"});
  CHECK(c.machine().state() == State::kServed);
}

TEST_CASE("while the fence clock runs, a slow endpoint takes only its share of the time left",
          "[rdzv][client][machine]") {
  Client c({kA, kB, kC});
  ServedThenQuiet(c);
  // B and C share the 167 ms left before the fence decides at 1000 ms.
  CHECK(Only(c.Fire(ClientTimer::kRetry), {"connect", "arm attempt"}) ==
        Lines{"connect 10.0.0.2:29400 #2", "arm attempt @+917ms"});
  c.AdvanceTo(917ms);  // B never answered the connect
  CHECK(Only(c.Fire(ClientTimer::kAttempt), {"close", "arm retry"}) ==
        Lines{"close #2", "arm retry @+917ms"});
  // C, the last of the sweep, takes what is left.
  CHECK(Only(c.Fire(ClientTimer::kRetry), {"connect", "arm attempt"}) ==
        Lines{"connect 10.0.0.3:29400 #3", "arm attempt @+1000ms"});
  c.AdvanceTo(930ms);
  c.Connected(3);
  // C is a standby whose current view names no leader: that keeps the
  // workers up to fence_timeout after its answer (fence_rule.h, R2).
  c.Receive(3, NoLeader());
  c.AdvanceTo(1000ms);
  CHECK(c.Fire(ClientTimer::kFence) == Lines{"arm fence @+1930ms"});
  CHECK(c.machine().state() == State::kProbing);
}

TEST_CASE("an attempt cut short by its share of the time left leaves its endpoint unsuspected",
          "[rdzv][client][machine]") {
  Client c({kA, kB, kC});
  ServedThenQuiet(c);
  c.Fire(ClientTimer::kRetry);  // B, bounded at 917 ms
  c.AdvanceTo(917ms);
  c.Fire(ClientTimer::kAttempt);
  CHECK_FALSE(c.machine().walk().IsSuspect(kB, c.now()));
}

TEST_CASE("an attempt silent for its whole deadline makes its endpoint suspect",
          "[rdzv][client][machine]") {
  Client c({kA, kB});
  c.Start();
  c.AdvanceTo(2000ms);
  CHECK(Only(c.Fire(ClientTimer::kAttempt), {"close"}) == Lines{"close #1"});
  CHECK(c.machine().walk().IsSuspect(kA, c.now()));
}

TEST_CASE("an attempt timer already due when the attempt connected does not end it",
          "[rdzv][client][machine]") {
  Client c({kA});
  c.Start();  // the attempt's deadline: 2000 ms
  c.AdvanceTo(2000ms);
  c.Connected(1);  // in the same turn as the timer, which then still fires
  CHECK(c.Fire(ClientTimer::kAttempt).empty());
  CHECK(c.machine().state() == State::kGreeting);
  c.AdvanceTo(4000ms);  // the greeting's own deadline
  CHECK(Only(c.Fire(ClientTimer::kAttempt), {"close"}) == Lines{"close #1"});
}

TEST_CASE("the leader is last heard at its latest message, never before its Welcome",
          "[rdzv][client][machine]") {
  Client c({kA});
  c.Start();
  CHECK_FALSE(c.machine().last_heard());
  c.Connected(1);
  c.AdvanceTo(10ms);
  CHECK_FALSE(c.machine().last_heard());
  c.Receive(1, DaemonWelcome());
  CHECK(c.machine().last_heard() == c.now());
  c.AdvanceTo(700ms);
  c.Receive(1, AssignmentOf(1, 0));
  CHECK(c.machine().last_heard() == c.now());
  const Time heard = c.now();
  c.AdvanceTo(900ms);
  c.Closed(1, /*peer_gone=*/true);
  CHECK(c.machine().last_heard() == heard);
}

TEST_CASE("a daemon silent for fence_timeout is fenced, a refusing one is not",
          "[rdzv][client][machine]") {
  SECTION("an open connection gone quiet") {
    Client c({kA});
    c.Start();
    c.Serve(1, 0);
    c.AdvanceTo(1000ms);
    CHECK(c.Fire(ClientTimer::kFence) == Lines{"fence"});
    CHECK(c.machine().state() == State::kServed);  // the connection stays; the workers go
  }
  SECTION("a daemon that restarts refuses connects") {
    Client c({kA});
    c.Start();
    c.Serve(1, 0);
    c.AdvanceTo(100ms);
    CHECK(Only(c.Closed(1, /*peer_gone=*/true), {"arm retry"}).size() == 1);
    CHECK(c.machine().state() == State::kConnecting);
    c.Fire(ClientTimer::kRetry);
    CHECK(Only(c.ConnectFailed(2, ConnectError::kRefused), {"arm retry"}).size() == 1);
    c.AdvanceTo(1000ms);
    CHECK(c.Fire(ClientTimer::kFence) == Lines{"arm fence @+1500ms"});
  }
}

TEST_CASE("replicas: no answer since the leader went quiet fences at fence_timeout",
          "[rdzv][client][machine]") {
  Client c({kA, kB});
  ServedThenQuiet(c);
  c.Fire(ClientTimer::kRetry);
  c.AdvanceTo(840ms);
  c.ConnectFailed(2, ConnectError::kRefused);  // a refusal is no answer
  c.AdvanceTo(1000ms);
  CHECK(c.Fire(ClientTimer::kFence) == Lines{"fence"});
  CHECK(c.machine().state() == State::kProbing);
  CHECK(c.machine().epoch() == 0);  // nothing runs to protect: any epoch may serve again
}

TEST_CASE("a Welcome or an assignment from a leader of an older epoch is refused",
          "[rdzv][client][machine]") {
  Client c({kA, kB});
  c.Start();
  c.Serve(1, 5);
  CHECK(Only(c.Receive(1, AssignmentOf(2, 4)), {"deliver"}).empty());
  c.Closed(1, /*peer_gone=*/false);
  c.Fire(ClientTimer::kRetry);
  c.Connected(2);
  // Not adopted: closed as a failed attempt, and the sweep (A and B) pauses.
  CHECK(Only(c.Receive(2, DaemonWelcome(4)), {"close", "arm retry"}) ==
        Lines{"close #2", "arm retry @+28ms"});
  CHECK(c.machine().state() == State::kConnecting);
}

TEST_CASE("the last outcome is sent again after the Join on a new connection",
          "[rdzv][client][machine]") {
  Client c({kA});
  c.Start();
  c.Serve(1, 0);
  c.Receive(1, AssignmentOf(1, 0));
  CHECK(c.Show(c.machine().ReportWorkerFailure(1, 1, "boom")) ==
        Lines{"send #1 WorkerFailed gen=1"});
  c.Closed(1, /*peer_gone=*/true);
  c.Fire(ClientTimer::kRetry);
  CHECK(Only(c.Connected(2), {"send"}) ==
        Lines{"send #2 Hello", "send #2 Join", "send #2 WorkerFailed gen=1"});
  c.Receive(2, DaemonWelcome());
  c.Receive(2, AssignmentOf(2, 0));  // a newer generation: that outcome is moot
  c.Closed(2, /*peer_gone=*/true);
  c.Fire(ClientTimer::kRetry);
  CHECK(Only(c.Connected(3), {"send"}) == Lines{"send #3 Hello", "send #3 Join"});
}

TEST_CASE("workers that stop are reported at once to a draining daemon",
          "[rdzv][client][machine]") {
  Client c({kA});
  c.Start();
  c.Serve(1, 0);
  Assignment a;
  a.generation = 3;
  CHECK(c.Show(c.machine().SetCurrent(a)).empty());
  CHECK(c.Show(c.machine().SetCurrent(std::nullopt)) == Lines{"send #1 Heartbeat gen=0"});
}

TEST_CASE("heartbeats carry the node's step of the current generation, and only that",
          "[rdzv][client][machine]") {
  Client c({kA});
  c.Start();
  c.Serve(1, 0);
  c.machine().SetProgress(7);  // no assignment yet: nothing to report a step for
  CHECK(Only(c.Fire(ClientTimer::kHeartbeat), {"send"}) == Lines{"send #1 Heartbeat gen=0"});
  Assignment a;
  a.generation = 3;
  c.machine().SetCurrent(a);
  CHECK(Only(c.Fire(ClientTimer::kHeartbeat), {"send"}) == Lines{"send #1 Heartbeat gen=3"});
  c.machine().SetProgress(120);
  CHECK(Only(c.Fire(ClientTimer::kHeartbeat), {"send"}) ==
        Lines{"send #1 Heartbeat gen=3 step=120"});
  // The same generation again (a repeated assignment) keeps the step.
  c.machine().SetCurrent(a);
  CHECK(Only(c.Fire(ClientTimer::kHeartbeat), {"send"}) ==
        Lines{"send #1 Heartbeat gen=3 step=120"});
  // A new generation's workers have reported nothing yet.
  a.generation = 4;
  c.machine().SetCurrent(a);
  CHECK(Only(c.Fire(ClientTimer::kHeartbeat), {"send"}) == Lines{"send #1 Heartbeat gen=4"});
  c.machine().SetProgress(5);
  // Workers stopped: the heartbeat that says so carries no step.
  CHECK(c.Show(c.machine().SetCurrent(std::nullopt)) == Lines{"send #1 Heartbeat gen=0"});
}

TEST_CASE("compute times ride on one heartbeat each, in the current generation only",
          "[rdzv][client][machine]") {
  Client c({kA});
  c.Start();
  c.Serve(1, 0);
  c.machine().SetCompute({1500});  // no assignment yet: nothing to report
  CHECK(Only(c.Fire(ClientTimer::kHeartbeat), {"send"}) == Lines{"send #1 Heartbeat gen=0"});
  Assignment a;
  a.generation = 3;
  c.machine().SetCurrent(a);
  c.machine().SetProgress(40);
  c.machine().SetCompute({21000, 0});
  CHECK(Only(c.Fire(ClientTimer::kHeartbeat), {"send"}) ==
        Lines{"send #1 Heartbeat gen=3 step=40 compute_us=21000,0"});
  // Sent once: the next heartbeats keep the daemon's fast path until an update.
  CHECK(Only(c.Fire(ClientTimer::kHeartbeat), {"send"}) ==
        Lines{"send #1 Heartbeat gen=3 step=40"});
  // An update for a generation that ends is not sent in the next one.
  c.machine().SetCompute({22000, 0});
  a.generation = 4;
  c.machine().SetCurrent(a);
  CHECK(Only(c.Fire(ClientTimer::kHeartbeat), {"send"}) == Lines{"send #1 Heartbeat gen=4"});
  // A list longer than the protocol's bound is cut to it.
  c.machine().SetCompute(std::vector<uint64_t>(kMaxComputeRanks + 5, 1));
  const Lines sent = Only(c.Fire(ClientTimer::kHeartbeat), {"send"});
  REQUIRE(sent.size() == 1);
  CHECK(std::count(sent[0].begin(), sent[0].end(), ',') == kMaxComputeRanks - 1);
}

TEST_CASE("a refusal for good stops the client and gives up", "[rdzv][client][machine]") {
  Client c({kA});
  c.Start();
  c.Connected(1);
  const Lines lines = c.Receive(1, Error{ErrorCode::kBadToken, "wrong token", true});
  CHECK(Only(lines, {"close", "give up"}) ==
        Lines{"close #1",
              "give up: the rendezvous at 10.0.0.1:29400 refused this agent: "
              "wrong token (bad_token)"});
  CHECK(c.machine().state() == State::kStopped);
  CHECK(c.Fire(ClientTimer::kHeartbeat).empty());
}

TEST_CASE("TLS refused, at the handshake or after it, stops the client and gives up",
          "[rdzv][client][machine]") {
  SECTION("the agent does not trust the daemon's certificate") {
    Client c({kA, kB});
    c.Start();
    const Lines lines = c.ConnectFailed(1, ConnectError::kTlsFailed);
    CHECK(Only(lines, {"give up", "connect"}) ==
          Lines{"give up: TLS with the rendezvous at 10.0.0.1:29400 failed: test"});
    CHECK(c.machine().state() == State::kStopped);
  }
  SECTION("the daemon refuses the agent's certificate after the handshake") {
    Client c({kA});
    c.Start();
    c.Connected(1);
    const Lines lines = c.ClosedByTls(1, "tlsv13 alert certificate required");
    CHECK(Only(lines, {"give up"}) ==
          Lines{"give up: TLS with the rendezvous at 10.0.0.1:29400 failed: "
                "tlsv13 alert certificate required"});
    CHECK(c.machine().state() == State::kStopped);
  }
  SECTION("a served connection that ends in a TLS error is lost like any other") {
    Client c({kA, kB});
    c.Start();
    c.Serve(1, 1);
    const Lines lines = c.ClosedByTls(1, "decryption failed");
    CHECK(Only(lines, {"give up"}).empty());
    CHECK(c.machine().state() != State::kStopped);
  }
}

TEST_CASE("no first contact within the limit gives up with the causes", "[rdzv][client][machine]") {
  Client c({kA});
  c.Start();
  c.ConnectFailed(1, ConnectError::kRefused);
  c.AdvanceTo(FirstContactLimit(Settings{}).first);
  const Lines lines = Only(c.Fire(ClientTimer::kFirstContact), {"give up"});
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("10.0.0.1:29400") != std::string::npos);
  CHECK(c.machine().state() == State::kStopped);
}

TEST_CASE("once fenced, a leader's Welcome serves the agent again", "[rdzv][client][machine]") {
  Client c({kA, kB});
  c.Start();
  c.Serve(1, 1);
  c.AdvanceTo(100ms);
  c.Closed(1, /*peer_gone=*/false);  // cut: no answer
  c.AdvanceTo(1000ms);
  CHECK(Only(c.Fire(ClientTimer::kFence), {"fence"}) == Lines{"fence"});
  CHECK(c.machine().state() == State::kFenced);
  c.Fire(ClientTimer::kRetry);
  c.Connected(2);
  c.Receive(2, DaemonWelcome(2));
  CHECK(c.machine().state() == State::kServed);
  CHECK(c.machine().epoch() == 2);
}

// --- the transition table (client_transitions.h) against the code --------

using Step = std::function<void(Client&)>;

// One row driven: `reach` brings a machine to the row's `from` state, and
// `make` is the event that changes it.
struct RowDriver {
  ClientTransition row;
  std::vector<Endpoint> endpoints;
  Step reach;
  Step make;
};

const Error kBadToken{ErrorCode::kBadToken, "wrong token", true};

std::vector<RowDriver> RowDrivers() {
  using S = ClientState;
  using T = ClientTrigger;
  const std::vector<Endpoint> one{kA};
  const std::vector<Endpoint> two{kA, kB};
  const Step start = [](Client& c) { c.Start(); };
  const Step greeting = [](Client& c) {
    c.Start();
    c.Connected(1);
  };
  const Step served = [](Client& c) {
    c.Start();
    c.Serve(1, 1);
  };
  const Step probing = [](Client& c) { ServedThenQuiet(c); };
  // A probe's or a fenced agent's next attempt (#2), connected.
  const Step second_attempt = [](Client& c) {
    c.Fire(ClientTimer::kRetry);
    c.Connected(2);
  };
  const auto then = [](Step first, Step second) {
    return [first, second](Client& c) {
      first(c);
      second(c);
    };
  };
  const auto receive = [](LinkId link, Message message) {
    return [link, message](Client& c) { c.Receive(link, message); };
  };
  const auto close = [](LinkId link) {
    return [link](Client& c) { c.Closed(link, /*peer_gone=*/false); };
  };
  const Step fence = [](Client& c) {
    c.AdvanceTo(1000ms);
    c.Fire(ClientTimer::kFence);
  };
  const Step stop = [](Client& c) { c.machine().Stop(); };
  // Served by A, then cut without a word at 100 ms: not fenced yet.
  const Step lost = [](Client& c) {
    c.Start();
    c.Serve(1, 1);
    c.AdvanceTo(100ms);
    c.Closed(1, /*peer_gone=*/false);
  };
  const Step fenced = then(lost, fence);
  // Served alone, and fenced with the link still open.
  const Step served_fenced = [](Client& c) {
    c.Start();
    c.Serve(1, 0);
    c.AdvanceTo(1000ms);
    c.Fire(ClientTimer::kFence);
  };
  // Probing, and fenced: the probe found nobody to answer.
  const Step probing_fenced = [](Client& c) {
    ServedThenQuiet(c);
    c.Fire(ClientTimer::kRetry);
    c.AdvanceTo(840ms);
    c.ConnectFailed(2, ConnectError::kRefused);
    c.AdvanceTo(1000ms);
    c.Fire(ClientTimer::kFence);
  };
  return {
      {{S::kConnecting, T::kConnected, S::kGreeting},
       two,
       start,
       [](Client& c) { c.Connected(1); }},
      {{S::kGreeting, T::kAttemptEnded, S::kConnecting}, two, greeting, close(1)},
      {{S::kGreeting, T::kStandbyAnswered, S::kConnecting},
       two,
       greeting,
       receive(1, NotLeader(kB, 3))},
      {{S::kGreeting, T::kWelcome, S::kServed}, two, greeting, receive(1, DaemonWelcome(1))},
      {{S::kProbing, T::kWelcome, S::kServed},
       two,
       probing,
       then(second_attempt, receive(2, DaemonWelcome(2)))},
      {{S::kFenced, T::kWelcome, S::kServed},
       two,
       fenced,
       then(second_attempt, receive(2, DaemonWelcome(2)))},
      {{S::kServed, T::kQuiet, S::kProbing},
       two,
       served,
       [](Client& c) {
         c.AdvanceTo(833ms);
         c.Fire(ClientTimer::kQuiet);
       }},
      {{S::kProbing, T::kLeaderHeard, S::kServed}, two, probing, receive(1, HeartbeatAck{})},
      {{S::kServed, T::kServedLost, S::kConnecting}, two, served, close(1)},
      {{S::kServed, T::kServedLost, S::kFenced}, one, served_fenced, close(1)},
      {{S::kProbing, T::kServedLost, S::kConnecting}, two, probing, close(1)},
      {{S::kProbing, T::kServedLost, S::kGreeting}, two, then(probing, second_attempt), close(1)},
      {{S::kProbing, T::kServedLost, S::kFenced}, two, probing_fenced, close(1)},
      {{S::kConnecting, T::kFence, S::kFenced}, two, lost, fence},
      {{S::kGreeting, T::kFence, S::kFenced}, two, then(lost, second_attempt), fence},
      {{S::kConnecting, T::kGiveUp, S::kStopped},
       two,
       start,
       [](Client& c) { c.ConnectFailed(1, ConnectError::kTlsFailed); }},
      {{S::kGreeting, T::kGiveUp, S::kStopped}, two, greeting, receive(1, kBadToken)},
      {{S::kServed, T::kGiveUp, S::kStopped}, two, served, receive(1, kBadToken)},
      {{S::kProbing, T::kGiveUp, S::kStopped},
       two,
       probing,
       then(second_attempt, receive(2, kBadToken))},
      {{S::kFenced, T::kGiveUp, S::kStopped},
       two,
       fenced,
       then(second_attempt, receive(2, kBadToken))},
      {{S::kConnecting, T::kStop, S::kStopped}, two, start, stop},
      {{S::kGreeting, T::kStop, S::kStopped}, two, greeting, stop},
      {{S::kServed, T::kStop, S::kStopped}, two, served, stop},
      {{S::kProbing, T::kStop, S::kStopped}, two, probing, stop},
      {{S::kFenced, T::kStop, S::kStopped}, two, fenced, stop},
  };
}

std::string Text(const std::optional<ClientTransition>& transition) {
  return transition ? ClientTransitionText(*transition) : "none";
}

TEST_CASE("every row of the transition table is a change the machine makes",
          "[rdzv][client][machine]") {
  const std::vector<RowDriver> drivers = RowDrivers();
  for (const RowDriver& driver : drivers) {
    INFO(ClientTransitionText(driver.row));
    CHECK(IsClientTransition(driver.row));
    Client c(driver.endpoints);
    driver.reach(c);
    REQUIRE(c.machine().state() == driver.row.from);
    driver.make(c);
    CHECK(Text(c.machine().last_transition()) == Text(driver.row));
    CHECK(c.machine().state() == driver.row.to);
    CHECK(Text(c.machine().stray_transition()) == "none");
  }
  for (const ClientTransition& row : kClientTransitions) {
    INFO("a row no test drives: " << ClientTransitionText(row));
    CHECK(std::any_of(drivers.begin(), drivers.end(),
                      [&](const RowDriver& d) { return d.row == row; }));
  }
}

TEST_CASE("a client with no endpoint gives up by a row of the table", "[rdzv][client][machine]") {
  Client c(std::vector<Endpoint>{});
  c.Start();
  CHECK(Text(c.machine().last_transition()) ==
        Text(ClientTransition{ClientState::kConnecting, ClientTrigger::kGiveUp,
                              ClientState::kStopped}));
  CHECK(Text(c.machine().stray_transition()) == "none");
}

}  // namespace
}  // namespace muster::rdzv
