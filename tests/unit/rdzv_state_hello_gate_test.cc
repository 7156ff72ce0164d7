// The daemon's answer to a connection's first message (hello_gate.h), as a
// table: the Hello, the token, what the replica knows of its role, and the
// reply each one gets.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "rendezvous/state/hello_gate.h"
#include "rendezvous/state/takeover_hold.h"

using namespace muster::rdzv;
using namespace std::chrono_literals;
using muster::Time;
using Verdict = HelloAnswer::Verdict;

namespace {

const Time kNow = Time{} + 100s;

Hello HelloWith(std::string token, uint32_t version = kProtocolVersion) {
  Hello hello;
  hello.protocol_version = version;
  hello.token = std::move(token);
  hello.agent_id = "host0:1:abc";
  return hello;
}

ReplicaStatus Standalone() { return ReplicaStatus{}; }

ReplicaStatus Leader(Time lead_until) {
  ReplicaStatus s;
  s.replicated = true;
  s.leading = true;
  s.lead_until = lead_until;
  s.epoch = 7;
  s.leader = "10.0.0.1:29400";
  s.self = "10.0.0.1:29400";
  s.fresh = true;
  s.view_read_at = kNow - 50ms;
  s.role = muster::rdzv::replica::Role::kLeader;
  return s;
}

ReplicaStatus Standby(std::string leader, bool fresh, Time view_read_at) {
  ReplicaStatus s;
  s.replicated = true;
  s.epoch = leader.empty() ? 0 : 7;
  s.leader = std::move(leader);
  s.self = "10.0.0.2:29400";
  s.fresh = fresh;
  s.view_read_at = view_read_at;
  s.role = muster::rdzv::replica::Role::kStandby;
  return s;
}

}  // namespace

TEST_CASE("a bad Hello is refused, fatally, whatever the replica's role", "[rdzv][hello]") {
  struct Row {
    const char* what;
    Message first;
    std::string token;
    ReplicaStatus replica;
    ErrorCode code;
    std::string message;
  };
  const std::vector<Row> rows = {
      {"not a Hello", Join{}, "", Standalone(), ErrorCode::kBadRequest,
       "the first message must be Hello"},
      {"another version", HelloWith("", kProtocolVersion + 1), "", Standalone(),
       ErrorCode::kBadVersion,
       "protocol version " + std::to_string(kProtocolVersion + 1) +
           " is not supported (this daemon speaks " + std::to_string(kProtocolVersion) + ")"},
      // Version 1 agents fence by their own --rdzv-conf, not the daemon's
      // timing: they must not join beside version 2 agents.
      {"an agent of version 1", HelloWith("", 1), "", Standalone(), ErrorCode::kBadVersion,
       "protocol version 1 is not supported (this daemon speaks 2)"},
      {"no token where one is required", HelloWith(""), "secret", Standalone(),
       ErrorCode::kBadToken, "this daemon requires a token (--token-file)"},
      {"a wrong token", HelloWith("secreT"), "secret", Standalone(), ErrorCode::kBadToken,
       "wrong token"},
      {"a longer token", HelloWith("secret2"), "secret", Standalone(), ErrorCode::kBadToken,
       "wrong token"},
      {"a token where none is required", HelloWith("secret"), "", Standalone(),
       ErrorCode::kBadToken, "wrong token"},
      // Checked before the role: a standby refuses a bad Hello as a leader does.
      {"a bad token at a standby", HelloWith("x"), "secret", Standby("", true, kNow),
       ErrorCode::kBadToken, "wrong token"},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    const HelloAnswer answer =
        AnswerHello(row.first, row.token, "d1", Settings{}, row.replica, kNow);
    CHECK(answer.verdict == Verdict::kRefused);
    REQUIRE(std::holds_alternative<Error>(answer.reply));
    const Error& error = std::get<Error>(answer.reply);
    CHECK(error.code == row.code);
    CHECK(error.message == row.message);
    CHECK(error.fatal);
  }
}

TEST_CASE("a good Hello is welcomed by a daemon that serves, with its epoch", "[rdzv][hello]") {
  struct Row {
    const char* what;
    std::string token;
    ReplicaStatus replica;
    uint64_t epoch;
  };
  const std::vector<Row> rows = {
      {"standalone, no token", "", Standalone(), 0},
      {"standalone, the right token", "secret", Standalone(), 0},
      {"a leader before its deadline", "", Leader(kNow + 1ms), 7},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    const HelloAnswer answer =
        AnswerHello(HelloWith(row.token), row.token, "d1", Settings{}, row.replica, kNow);
    CHECK(answer.verdict == Verdict::kWelcome);
    CHECK(answer.reply == Message{Welcome{kProtocolVersion, "d1", row.epoch, TimingOf({})}});
  }
}

TEST_CASE("a replica that does not serve answers as a standby, never naming itself",
          "[rdzv][hello]") {
  const Time stale = kNow - kStandbyViewCurrentFor - 1ms;
  ReplicaStatus own_key = Standby("10.0.0.2:29400", true, kNow);  // itself
  ReplicaStatus lapsed = Leader(kNow);                            // its deadline is now
  struct Row {
    const char* what;
    ReplicaStatus replica;
    ErrorCode code;
    std::string message;
    std::string leader;
    uint64_t epoch;
    bool current;
  };
  const std::vector<Row> rows = {
      {"a known leader, read just now", Standby("10.0.0.1:29400", true, kNow - 100ms),
       ErrorCode::kNotLeader, "not the leader: the leader is 10.0.0.1:29400 (epoch 7)",
       "10.0.0.1:29400", 7, true},
      {"a known leader, read at the limit",
       Standby("10.0.0.1:29400", true, kNow - kStandbyViewCurrentFor), ErrorCode::kNotLeader,
       "not the leader: the leader is 10.0.0.1:29400 (epoch 7)", "10.0.0.1:29400", 7, true},
      {"a known leader, read too long ago", Standby("10.0.0.1:29400", true, stale),
       ErrorCode::kNotLeader, "not the leader: the leader is 10.0.0.1:29400 (epoch 7)",
       "10.0.0.1:29400", 7, false},
      {"no leader elected", Standby("", true, kNow), ErrorCode::kNoLeader,
       "no leader is elected yet", "", 0, true},
      {"etcd out of reach", Standby("10.0.0.1:29400", false, kNow), ErrorCode::kNoLeader,
       "no leader is known (etcd is out of reach)", "", 0, false},
      {"its own key outlived its lead", own_key, ErrorCode::kNoLeader, "no leader is elected yet",
       "", 0, true},
      {"a lead whose deadline passed", lapsed, ErrorCode::kNoLeader, "no leader is elected yet", "",
       0, true},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    const HelloAnswer answer = AnswerHello(HelloWith(""), "", "d1", Settings{}, row.replica, kNow);
    CHECK(answer.verdict == Verdict::kRedirected);
    REQUIRE(std::holds_alternative<Error>(answer.reply));
    const Error& error = std::get<Error>(answer.reply);
    CHECK(error == StandbyAnswer(row.replica, kNow));
    CHECK(error.code == row.code);
    CHECK(error.message == row.message);
    CHECK_FALSE(error.fatal);
    CHECK(error.leader == row.leader);
    CHECK(error.epoch == row.epoch);
    CHECK(error.current == row.current);
  }
}

TEST_CASE("the Welcome carries the timing the daemon acts on, in milliseconds", "[rdzv][hello]") {
  Settings settings;
  settings.keep_alive_interval = Duration(2'000);
  settings.heartbeat_timeout = Duration(10'000);
  settings.fence_timeout = Duration(8'000);
  settings.failover_timeout = Duration(10'500);
  const HelloAnswer answer = AnswerHello(HelloWith(""), "", "d1", settings, Standalone(), kNow);
  REQUIRE(std::holds_alternative<Welcome>(answer.reply));
  CHECK(std::get<Welcome>(answer.reply).timing == DaemonTiming{.keep_alive_interval_ms = 2'000,
                                                               .heartbeat_timeout_ms = 10'000,
                                                               .fence_timeout_ms = 8'000,
                                                               .failover_timeout_ms = 10'500});
}

TEST_CASE("the serving epoch is the replica's only while it leads", "[rdzv][hello]") {
  CHECK(ServingEpoch(Standalone()) == 0);
  CHECK(ServingEpoch(Leader(kNow + 1s)) == 7);
  CHECK(ServingEpoch(Standby("10.0.0.1:29400", true, kNow)) == 0);
}
