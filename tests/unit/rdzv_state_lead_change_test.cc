// A replica's changes of role (lead_change.h) as tables, and the widened
// heartbeat timeout of a new leader on the fake cluster, which takes over
// with the settings production gives a leader.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "rendezvous/state/lead_change.h"
#include "rendezvous/state/takeover_hold.h"
#include "tests/unit/rdzv_state_test_support.h"

using namespace muster::rdzv;
using namespace muster::rdzv::testing;
using namespace std::chrono_literals;
using muster::Time;
using muster::rdzv::replica::Role;

namespace {

const Time kLeadChangeNow = Time{} + 100s;

ReplicaStatus Leading(Time lead_until) {
  ReplicaStatus s;
  s.replicated = true;
  s.leading = true;
  s.lead_until = lead_until;
  s.epoch = 3;
  s.leader = "10.0.0.1:29400";
  s.self = "10.0.0.1:29400";
  s.fresh = true;
  s.role = Role::kLeader;
  s.lead_margin = 600ms;
  s.run_records = {{"job", RunRecord{.run_id = "job", .generation = 4}}};
  return s;
}

ReplicaStatus Starting() {
  ReplicaStatus s;
  s.replicated = true;
  s.role = Role::kStarting;
  return s;
}

ReplicaStatus Standing() {
  ReplicaStatus s;
  s.replicated = true;
  s.leader = "10.0.0.9:29400";
  s.epoch = 2;
  s.fresh = true;
  s.role = Role::kStandby;
  return s;
}

}  // namespace

TEST_CASE("a leader's heartbeat timeout covers an agent kept by a standby", "[rdzv][lead]") {
  struct Row {
    Duration heartbeat_timeout, failover_timeout, keep_alive_interval, expected;
  };
  const std::vector<Row> rows = {
      {1'250ms, 3'500ms, 500ms, 4'000ms},  // the defaults: widened
      {5'000ms, 3'500ms, 500ms, 5'000ms},  // already longer: kept
      {4'000ms, 3'500ms, 500ms, 4'000ms},  // exactly: kept
      {1'000ms, 1'200ms, 250ms, 1'450ms},
  };
  for (const Row& row : rows) {
    Settings configured;
    configured.heartbeat_timeout = row.heartbeat_timeout;
    configured.failover_timeout = row.failover_timeout;
    configured.keep_alive_interval = row.keep_alive_interval;
    const Settings leader = LeaderSettings(configured);
    CHECK(leader.heartbeat_timeout == row.expected);
    Settings rest = leader;
    rest.heartbeat_timeout = configured.heartbeat_timeout;
    CHECK(rest.failover_timeout == configured.failover_timeout);  // nothing else moves
    CHECK(rest.keep_alive_interval == configured.keep_alive_interval);
    CHECK(rest == configured);
  }
}

TEST_CASE("a lead is taken only while it serves", "[rdzv][lead]") {
  struct Row {
    const char* what;
    ReplicaStatus given;
    bool leading;
    Role role;
  };
  const std::vector<Row> rows = {
      {"a lead before its deadline", Leading(kLeadChangeNow + 1ms), true, Role::kLeader},
      {"a lead at its deadline", Leading(kLeadChangeNow), false, Role::kStandby},
      {"a lead that arrived late", Leading(kLeadChangeNow - 1s), false, Role::kStandby},
      {"a standby", Standing(), false, Role::kStandby},
      {"standalone", ReplicaStatus{}, false, Role::kStandalone},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    const ReplicaStatus taken = TakeStatus(row.given, kLeadChangeNow);
    CHECK(taken.leading == row.leading);
    CHECK(taken.role == row.role);
    CHECK(taken.epoch == row.given.epoch);  // the rest as given
    CHECK(taken.leader == row.given.leader);
  }
}

TEST_CASE("a lead that ran out knows no leader until etcd is read again", "[rdzv][lead]") {
  CHECK_FALSE(LapsedLead(Leading(kLeadChangeNow + 1ms), kLeadChangeNow));
  CHECK_FALSE(LapsedLead(Standing(), kLeadChangeNow));
  CHECK_FALSE(LapsedLead(ReplicaStatus{}, kLeadChangeNow));
  const auto lapsed = LapsedLead(Leading(kLeadChangeNow), kLeadChangeNow);
  REQUIRE(lapsed);
  CHECK(lapsed->leader.empty());
  CHECK_FALSE(lapsed->fresh);
  CHECK(lapsed->epoch == 3);
  // Taken, it is a standby's, and the lead is lost.
  const ReplicaStatus taken = TakeStatus(*lapsed, kLeadChangeNow);
  CHECK_FALSE(taken.leading);
  const auto change =
      DecideLeadChange(Leading(kLeadChangeNow), taken, Settings{}, kLeadChangeNow, "ran out");
  REQUIRE(change);
  CHECK(change->why == "ran out");
}

TEST_CASE("only a change of lead drops everything", "[rdzv][lead]") {
  const Settings configured;
  struct Row {
    const char* what;
    ReplicaStatus before, after;
    bool changes;
  };
  const std::vector<Row> rows = {
      {"standalone stays", ReplicaStatus{}, ReplicaStatus{}, false},
      {"starting to standby", Starting(), Standing(), false},
      {"a leader renews", Leading(kLeadChangeNow + 1s), Leading(kLeadChangeNow + 2s), false},
      {"a standby takes the lead", Standing(), Leading(kLeadChangeNow + 1s), true},
      {"a leader steps down", Leading(kLeadChangeNow + 1s), Standing(), true},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    CHECK(DecideLeadChange(row.before, row.after, configured, kLeadChangeNow, "stepped down")
              .has_value() == row.changes);
  }
}

TEST_CASE("taking the lead holds the rebuild and starts from etcd's records", "[rdzv][lead]") {
  const Settings configured;
  const ReplicaStatus after = Leading(kLeadChangeNow + 1s);
  const auto change = DecideLeadChange(Standing(), after, configured, kLeadChangeNow, "unused");
  REQUIRE(change);
  CHECK(change->why == "this replica took the lead (epoch 3)");
  CHECK(change->takeover.rebuild_hold_until == kLeadChangeNow + TakeoverHold(configured, 600ms));
  CHECK(change->takeover.records == after.run_records);
  CHECK(change->settings == LeaderSettings(configured));
}

TEST_CASE("losing the lead starts an empty core with the settings as configured", "[rdzv][lead]") {
  const Settings configured;
  const auto change = DecideLeadChange(Leading(kLeadChangeNow + 1s), Standing(), configured,
                                       kLeadChangeNow, "this replica stepped down");
  REQUIRE(change);
  CHECK(change->why == "this replica stepped down");
  CHECK(change->takeover == Takeover{});
  CHECK(change->settings == configured);
}

TEST_CASE("after a takeover a silent member keeps its ranks until a standby's bound",
          "[rdzv][lead]") {
  FakeCluster c = AtGeneration2AfterOneRestart(2);
  c.TakeOver({.rebuild_hold_until = std::nullopt, .records = c.Records()});
  for (int i = 0; i < 3; ++i) c.Rejoin(i);
  c.ExpectNoNewGeneration();
  REQUIRE(c.Phase() == "running");
  // Agent 1 goes silent: it may still run its workers on a standby's word
  // for failover_timeout after it last heard a leader.
  c.agent(1).silent = true;
  const Duration widened = c.settings().failover_timeout + c.settings().keep_alive_interval;
  REQUIRE(widened > c.settings().heartbeat_timeout);
  c.Run(c.settings().heartbeat_timeout + c.settings().keep_alive_interval);
  c.ExpectNoNewGeneration();
  c.Run(widened);
  auto gen = c.ExpectNewGeneration();
  CHECK(gen.front().generation == 3);
  CHECK(c.Members() == std::vector<int>{0, 2});
}

TEST_CASE("a restarted daemon keeps the heartbeat timeout as configured", "[rdzv][lead]") {
  FakeCluster c = AtGeneration2AfterOneRestart(2);
  c.RestartDaemon();
  for (int i = 0; i < 3; ++i) c.Rejoin(i);
  REQUIRE(c.Phase() == "running");
  c.agent(1).silent = true;
  c.Run(c.settings().heartbeat_timeout + c.settings().keep_alive_interval);
  auto gen = c.ExpectNewGeneration();
  CHECK(c.Members() == std::vector<int>{0, 2});
}
