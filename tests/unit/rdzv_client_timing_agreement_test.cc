// One timing for the whole run (timing_agreement.h): the agent heartbeats and
// fences by the daemon's timing, whatever its own --rdzv-conf says, warns
// once naming both values, and refuses a daemon whose timing breaks the
// fence rule. AdoptDaemonTiming as a table, then ClientMachine on a
// hand-driven clock.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "common/clock.h"
#include "rendezvous/client/client_machine.h"
#include "rendezvous/client/timing_agreement.h"
#include "rendezvous/state/hello_gate.h"
#include "tests/unit/rdzv_client_test_support.h"

namespace muster::rdzv {
namespace {

using namespace std::chrono_literals;
using testing::Lines;
using testing::Only;

// An agent started with --rdzv-conf heartbeat_timeout=10: it would fence
// after 8 s and heartbeat every 0.5 s.
Settings LongHeartbeatTimeoutAgent() {
  auto parsed = Settings::FromConf({{"heartbeat_timeout", "10"}});
  REQUIRE(parsed.ok());
  return *parsed;
}

const DaemonTiming kDefaultDaemonTiming = TimingOf(Settings{});

TEST_CASE("the daemon's timing replaces the agent's, naming each value that differs",
          "[rdzv][client][timing]") {
  auto adopted = AdoptDaemonTiming(LongHeartbeatTimeoutAgent(), kDefaultDaemonTiming);
  REQUIRE(adopted.ok());
  CHECK(adopted->settings.keep_alive_interval == 500ms);
  CHECK(adopted->settings.heartbeat_timeout == 1250ms);
  CHECK(adopted->settings.fence_timeout == 1000ms);
  CHECK(adopted->settings.failover_timeout == 3500ms);
  CHECK(adopted->differences ==
        "heartbeat_timeout=1.25s(own=10s) fence_timeout=1s(own=8s) "
        "failover_timeout=3.5s(own=10.5s)");
  // The agent's own business stays its own.
  CHECK(adopted->settings.join_timeout == LongHeartbeatTimeoutAgent().join_timeout);
  CHECK(adopted->settings.connect_timeout == LongHeartbeatTimeoutAgent().connect_timeout);
}

TEST_CASE("an agent started with the daemon's timing has nothing to say",
          "[rdzv][client][timing]") {
  auto adopted = AdoptDaemonTiming(Settings{}, kDefaultDaemonTiming);
  REQUIRE(adopted.ok());
  CHECK(adopted->settings == Settings{});
  CHECK(adopted->differences.empty());
}

TEST_CASE("a shorter daemon timeout shortens the agent's fence too", "[rdzv][client][timing]") {
  // The rule must hold whatever either side was started with: an agent with
  // the shorter timeout follows a daemon with a longer one as well.
  Settings daemon;
  daemon.keep_alive_interval = 2s;
  daemon.heartbeat_timeout = 20s;
  daemon.fence_timeout = 16s;
  daemon.failover_timeout = 18500ms;
  auto adopted = AdoptDaemonTiming(Settings{}, TimingOf(daemon));
  REQUIRE(adopted.ok());
  CHECK(adopted->settings.fence_timeout == 16s);
  CHECK(adopted->settings.keep_alive_interval == 2s);
  CHECK(adopted->differences ==
        "keep_alive_interval=2s(own=0.5s) heartbeat_timeout=20s(own=1.25s) "
        "fence_timeout=16s(own=1s) failover_timeout=18.5s(own=3.5s)");
}

TEST_CASE("a daemon timing that breaks the fence rule is refused, naming the setting",
          "[rdzv][client][timing]") {
  struct Row {
    const char* what;
    DaemonTiming timing;
    std::string message;
  };
  const std::string unusable = "the rendezvous's timing is unusable: ";
  const std::vector<Row> rows = {
      {"no timing at all", DaemonTiming{}, unusable + "keep_alive_interval=0 ms is not a timeout"},
      {"a fence after the place is given away",
       {500, 1'250, 1'250, 3'500},
       unusable + "fence_timeout=1.25s must be shorter than heartbeat_timeout=1.25s"},
      {"heartbeats slower than the timeout",
       {2'000, 1'250, 1'000, 3'500},
       unusable + "keep_alive_interval=2s must be shorter than heartbeat_timeout=1.25s"},
      {"a failover bound inside the fence",
       {500, 1'250, 1'000, 1'000},
       unusable + "failover_timeout=1s must be longer than fence_timeout=1s"},
      {"more than a week",
       {500, 1'250, 1'000, 8ull * 86'400'000},
       unusable + "failover_timeout=691200000 ms is not a timeout"},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    auto adopted = AdoptDaemonTiming(Settings{}, row.timing);
    REQUIRE_FALSE(adopted.ok());
    CHECK(adopted.status().message() == row.message);
  }
}

// One agent's client on a hand-driven clock, started with `settings`.
class TimedClient {
 public:
  explicit TimedClient(Settings settings) : machine_(Options(settings), 1) {}

  static ClientOptions Options(Settings settings) {
    ClientOptions options;
    options.endpoints = {Endpoint{"10.0.0.1", 29400}};
    options.join.run_id = "r";
    options.join.node_id = "n1";
    options.settings = settings;
    return options;
  }

  void AdvanceTo(std::chrono::milliseconds since_start) { now_ = kStart + since_start; }
  ClientActions Start() { return machine_.Start(now_); }
  ClientActions Connected(LinkId link) { return machine_.OnConnected(link, "10.0.0.9", now_); }
  ClientActions Receive(LinkId link, const Message& message) {
    return machine_.OnMessage(link, message, now_);
  }
  ClientActions Closed(LinkId link) {
    return machine_.OnClosed(link, "test", ChannelEnd::kLocal, now_);
  }
  ClientActions Fire(ClientTimer timer) { return machine_.OnTimer(timer, now_); }
  ClientMachine& machine() { return machine_; }
  Lines Show(const ClientActions& actions) const { return testing::Show(actions, kStart); }

 private:
  static constexpr Time kStart{std::chrono::seconds(100)};
  ClientMachine machine_;
  Time now_ = kStart;
};

Welcome TimedWelcome(DaemonTiming timing) { return Welcome{kProtocolVersion, "d", 0, timing}; }

std::vector<std::string> WarningsOf(const ClientActions& actions) {
  std::vector<std::string> lines;
  for (const ClientAction& action : actions) {
    if (const auto* log = std::get_if<ClientLog>(&action);
        log && log->level == ClientLog::Level::kWarn) {
      lines.push_back(log->line);
    }
  }
  return lines;
}

TEST_CASE(
    "an agent with a longer heartbeat_timeout fences by the daemon's, before it gives "
    "the agent's place away",
    "[rdzv][client][timing]") {
  TimedClient c(LongHeartbeatTimeoutAgent());
  c.Start();
  c.Connected(1);
  c.AdvanceTo(10ms);
  const ClientActions welcomed = c.Receive(1, TimedWelcome(kDefaultDaemonTiming));
  CHECK(WarningsOf(welcomed) ==
        std::vector<std::string>{"event=rdzv_timing_adopted endpoint=10.0.0.1:29400 "
                                 "heartbeat_timeout=1.25s(own=10s) fence_timeout=1s(own=8s) "
                                 "failover_timeout=3.5s(own=10.5s); heartbeats and fencing "
                                 "follow the rendezvous's --rdzv-conf"});
  // The fence is decided 1 s after the last word, not 8 s.
  CHECK(Only(c.Show(welcomed), {"arm fence"}) == Lines{"arm fence @+1010ms"});
  CHECK(c.machine().settings().fence_timeout == 1000ms);
  // Silent since: fenced at 1.01 s, before the daemon's 1.25 s.
  c.AdvanceTo(1010ms);
  CHECK(c.Show(c.Fire(ClientTimer::kFence)) == Lines{"fence"});
}

TEST_CASE("the same timing on a later Welcome is not warned about again",
          "[rdzv][client][timing]") {
  TimedClient c(LongHeartbeatTimeoutAgent());
  c.Start();
  c.Connected(1);
  CHECK(WarningsOf(c.Receive(1, TimedWelcome(kDefaultDaemonTiming))).size() == 1);
  c.AdvanceTo(100ms);
  c.Closed(1);
  c.AdvanceTo(300ms);
  c.Fire(ClientTimer::kRetry);
  c.Connected(2);
  const ClientActions again = c.Receive(2, TimedWelcome(kDefaultDaemonTiming));
  CHECK(Only(WarningsOf(again), {"event=rdzv_timing_adopted"}).empty());
  CHECK(c.machine().state() == ClientMachine::State::kServed);
}

TEST_CASE("a heartbeat armed at the agent's slower interval comes at the daemon's",
          "[rdzv][client][timing]") {
  auto slow = Settings::FromConf({{"keep_alive_interval", "5"}, {"heartbeat_timeout", "20"}});
  REQUIRE(slow.ok());
  TimedClient c(*slow);
  CHECK(Only(c.Show(c.Start()), {"arm heartbeat"}) == Lines{"arm heartbeat @+5000ms"});
  c.Connected(1);
  c.AdvanceTo(10ms);
  CHECK(Only(c.Show(c.Receive(1, TimedWelcome(kDefaultDaemonTiming))), {"arm heartbeat"}) ==
        Lines{"arm heartbeat @+510ms"});
  c.AdvanceTo(510ms);
  CHECK(c.Show(c.Fire(ClientTimer::kHeartbeat)) ==
        Lines{"send #1 Heartbeat gen=0", "arm heartbeat @+1010ms"});
}

TEST_CASE("a daemon whose timing breaks the fence rule is refused, and the agent gives up",
          "[rdzv][client][timing]") {
  TimedClient c(Settings{});
  c.Start();
  c.Connected(1);
  const ClientActions refused = c.Receive(1, TimedWelcome({500, 1'250, 2'000, 3'500}));
  CHECK(Only(c.Show(refused), {"give up"}) ==
        Lines{"give up: the rendezvous at 10.0.0.1:29400 cannot be followed: the rendezvous's "
              "timing is unusable: fence_timeout=2s must be shorter than heartbeat_timeout=1.25s"});
  CHECK(c.machine().state() == ClientMachine::State::kStopped);
}

}  // namespace
}  // namespace muster::rdzv
