// The leader election's rules (leader_election.h), with fake time: what a
// replica asks of etcd, when it leads, when it steps down, what it tells
// agents of the leader.
#include <catch2/catch.hpp>

#include <string>
#include <variant>
#include <vector>

#include "rendezvous/replica/leader_election.h"

using namespace muster::rdzv::replica;
using muster::Time;
using std::chrono::milliseconds;

namespace {

const Time t0{};
Time At(int ms) { return t0 + milliseconds(ms); }

template <typename A>
const A* Find(const std::vector<ElectionAction>& actions) {
  for (const auto& a : actions) {
    if (const auto* found = std::get_if<A>(&a)) return found;
  }
  return nullptr;
}

template <typename A>
bool Has(const std::vector<ElectionAction>& actions) {
  return Find<A>(actions) != nullptr;
}

// A replica that was granted lease 7 (TTL 2 s) at t=0.
struct Replica {
  LeaderElection election{"10.0.0.1:29400", ElectionSettings{}, t0};
  std::vector<ElectionAction> last;

  Replica() {
    REQUIRE(Has<GrantLease>(election.Start()));
    last = election.Handle(LeaseGranted{.lease_id = 7, .ttl = milliseconds(2000), .sent_at = t0});
  }
  std::vector<ElectionAction> Tick(int ms) { return last = election.Handle(::Tick{At(ms)}); }
  void Win(int ms, uint64_t epoch) {
    last = election.Handle(CampaignDone{
        .won = true, .leader = "10.0.0.1:29400", .epoch = epoch, .lease = 7, .sent_at = At(ms)});
  }
  void Lose(int ms, const std::string& leader, uint64_t epoch) {
    last = election.Handle(CampaignDone{
        .won = false, .leader = leader, .epoch = epoch, .lease = 99, .sent_at = At(ms)});
  }
  void Renewed(int ms, int ttl_ms = 2000) {
    last = election.Handle(
        KeepAliveDone{.lease_id = 7, .ttl = milliseconds(ttl_ms), .sent_at = At(ms)});
  }
};

}  // namespace

TEST_CASE("settings that cannot work are refused, naming the value", "[replica][election]") {
  CHECK_FALSE(CheckElectionSettings(ElectionSettings{}));
  ElectionSettings s;
  s.step_down_margin = milliseconds(2000);
  CHECK(*CheckElectionSettings(s) ==
        "step_down_margin 2000 ms is not shorter than lease_ttl 2000 ms");
  s = {};
  s.renew_interval = milliseconds(1400);
  CHECK_THAT(*CheckElectionSettings(s), Catch::StartsWith("renew_interval 1400 ms leaves no"));
  s = {};
  s.poll_interval = milliseconds(0);
  CHECK(*CheckElectionSettings(s) == "poll_interval 0 ms is not positive");
}

TEST_CASE("a replica campaigns as soon as it holds a lease", "[replica][election]") {
  Replica r;
  const auto* campaign = Find<Campaign>(r.last);
  REQUIRE(campaign);
  CHECK(campaign->lease_id == 7);
  CHECK(r.election.role() == Role::kStandby);
}

TEST_CASE("the winner leads with the key's create revision as its epoch", "[replica][election]") {
  Replica r;
  r.Win(5, 42);
  const auto* became = Find<BecomeLeader>(r.last);
  REQUIRE(became);
  CHECK(became->epoch == 42);
  CHECK(r.election.role() == Role::kLeader);
  CHECK(r.election.epoch() == 42);
  CHECK(r.election.view() == LeaderView{"10.0.0.1:29400", 42, true});
  CHECK(r.election.MayLead(At(100)));
}

TEST_CASE("a loser follows the leader the key names and polls it", "[replica][election]") {
  Replica r;
  r.Lose(5, "10.0.0.2:29400", 40);
  const auto* changed = Find<ViewChanged>(r.last);
  REQUIRE(changed);
  CHECK(changed->view == LeaderView{"10.0.0.2:29400", 40, true});
  CHECK(r.election.epoch() == 0);
  CHECK_FALSE(r.election.MayLead(At(10)));
  CHECK_FALSE(Has<ReadLeader>(r.Tick(50)));  // polls every 100 ms after the campaign
  CHECK(Has<ReadLeader>(r.Tick(110)));
  CHECK_FALSE(Has<ReadLeader>(r.Tick(160)));  // one read at a time
}

TEST_CASE("a standby campaigns once the key is gone", "[replica][election]") {
  Replica r;
  r.Lose(5, "10.0.0.2:29400", 40);
  r.Tick(110);
  auto actions = r.election.Handle(
      LeaderRead{.present = false, .leader = "", .epoch = 0, .lease = 0, .sent_at = At(110)});
  CHECK(Has<Campaign>(actions));
  const auto* changed = Find<ViewChanged>(actions);
  REQUIRE(changed);
  CHECK(changed->view == LeaderView{"", 0, true});  // election in progress
}

TEST_CASE("a new leader's epoch is seen by the standbys' next read", "[replica][election]") {
  Replica r;
  r.Lose(5, "10.0.0.2:29400", 40);
  r.Tick(110);
  auto actions = r.election.Handle(LeaderRead{
      .present = true, .leader = "10.0.0.3:29400", .epoch = 57, .lease = 98, .sent_at = At(110)});
  const auto* changed = Find<ViewChanged>(actions);
  REQUIRE(changed);
  CHECK(changed->view == LeaderView{"10.0.0.3:29400", 57, true});
}

TEST_CASE("a leader renews every renew_interval and keeps leading", "[replica][election]") {
  Replica r;
  r.Win(5, 42);
  CHECK_FALSE(Has<KeepAlive>(r.Tick(400)));
  CHECK(Has<KeepAlive>(r.Tick(500)));
  r.Renewed(500);
  CHECK(r.election.MayLead(At(1800)));  // 500 + 2000 - 600
  CHECK_FALSE(r.election.MayLead(At(1900)));
  CHECK(Has<KeepAlive>(r.Tick(1000)));
  CHECK_FALSE(Has<StepDown>(r.last));
}

TEST_CASE("a leader that cannot renew steps down before etcd can expire its lease",
          "[replica][election]") {
  Replica r;
  r.Win(5, 42);
  r.Tick(500);  // KeepAlive sent, never answered
  CHECK_FALSE(Has<StepDown>(r.Tick(1300)));
  auto actions = r.Tick(1400);  // granted at 0 + TTL 2000 - margin 600
  const auto* down = Find<StepDown>(actions);
  REQUIRE(down);
  CHECK(down->why == "the lease was not renewed in time");
  const auto* revoke = Find<RevokeLease>(actions);
  REQUIRE(revoke);
  CHECK(revoke->lease_id == 7);
  CHECK(r.election.role() == Role::kStandby);
  CHECK(r.election.epoch() == 0);
  CHECK_FALSE(r.election.MayLead(At(1400)));
  CHECK(r.election.view() == LeaderView{"", 0, false});
  CHECK(Has<GrantLease>(actions));  // a new lease, then a new campaign
}

TEST_CASE("a leader whose lease etcd no longer knows steps down at once", "[replica][election]") {
  Replica r;
  r.Win(5, 42);
  r.Tick(500);
  r.Renewed(500, 0);
  const auto* down = Find<StepDown>(r.last);
  REQUIRE(down);
  CHECK(down->why == "the lease expired at etcd");
  CHECK(r.election.role() == Role::kStandby);
}

TEST_CASE("a failed renewal is retried, and the leader steps down only at its deadline",
          "[replica][election]") {
  Replica r;
  r.Win(5, 42);
  r.Tick(500);
  r.election.Handle(EtcdFailed{.call = EtcdCall::kKeepAlive, .why = "timeout", .at = At(700)});
  CHECK_FALSE(Has<KeepAlive>(r.Tick(900)));
  CHECK(Has<KeepAlive>(r.Tick(950)));  // 700 + retry 250
  r.Renewed(950);
  CHECK_FALSE(Has<StepDown>(r.Tick(1500)));
  CHECK(r.election.MayLead(At(2300)));  // 950 + 2000 - 600
}

TEST_CASE("a renewal answered late never moves the deadline back", "[replica][election]") {
  Replica r;
  r.Win(5, 42);
  r.Renewed(900);
  r.Renewed(500);  // an older request's answer
  CHECK(r.election.MayLead(At(2200)));
}

TEST_CASE("a standby's view goes stale when etcd is out of reach", "[replica][election]") {
  Replica r;
  r.Lose(5, "10.0.0.2:29400", 40);
  r.Tick(110);  // ReadLeader
  r.election.Handle(EtcdFailed{.call = EtcdCall::kReadLeader, .why = "refused", .at = At(200)});
  r.Renewed(500);
  auto actions = r.Tick(2010);
  const auto* changed = Find<ViewChanged>(actions);
  REQUIRE(changed);
  CHECK(changed->view == LeaderView{"10.0.0.2:29400", 40, false});
}

TEST_CASE("a failed grant is retried after retry_interval", "[replica][election]") {
  LeaderElection e("10.0.0.1:29400", ElectionSettings{}, t0);
  e.Start();
  e.Handle(EtcdFailed{.call = EtcdCall::kGrantLease, .why = "refused", .at = At(10)});
  CHECK(e.Handle(Tick{At(200)}).empty());
  auto actions = e.Handle(Tick{At(260)});
  CHECK(Has<GrantLease>(actions));
  CHECK(e.Handle(Tick{At(300)}).empty());  // one grant at a time
  CHECK(e.role() == Role::kStarting);
}

TEST_CASE("a standby whose lease lapsed takes a new one", "[replica][election]") {
  Replica r;
  r.Lose(5, "10.0.0.2:29400", 40);
  auto actions = r.Tick(2000);  // never renewed since the grant at 0
  CHECK(Has<RevokeLease>(actions));
  CHECK_FALSE(Has<StepDown>(actions));
  CHECK(Has<GrantLease>(actions));
}

TEST_CASE("the names of roles and calls", "[replica][election]") {
  CHECK(std::string(RoleName(Role::kLeader)) == "leader");
  CHECK(std::string(RoleName(Role::kStandby)) == "standby");
  CHECK(std::string(EtcdCallName(EtcdCall::kCampaign)) == "campaign");
}

TEST_CASE("a key bound to the replica's own lease is its win, though the answer said lost",
          "[replica][election]") {
  // The create committed, but its answer was lost and the retry found the key.
  Replica r;
  r.last = r.election.Handle(CampaignDone{
      .won = false, .leader = "10.0.0.1:29400", .epoch = 9, .lease = 7, .sent_at = At(5)});
  const auto* became = Find<BecomeLeader>(r.last);
  REQUIRE(became);
  CHECK(became->epoch == 9);
  CHECK(r.election.role() == Role::kLeader);
}

TEST_CASE("a read that finds the key on the replica's own lease makes it lead",
          "[replica][election]") {
  Replica r;
  r.election.Handle(EtcdFailed{.call = EtcdCall::kCampaign, .why = "timeout", .at = At(400)});
  r.Tick(650);  // ReadLeader
  auto actions = r.election.Handle(LeaderRead{
      .present = true, .leader = "10.0.0.1:29400", .epoch = 9, .lease = 7, .sent_at = At(650)});
  CHECK(Has<BecomeLeader>(actions));
  // Another lease, even with this replica's address (an old lead), is not.
  Replica other;
  other.Lose(5, "10.0.0.1:29400", 3);
  CHECK(other.election.role() == Role::kStandby);
}

TEST_CASE("no campaign on a lease too close to its end to lead on", "[replica][election]") {
  Replica r;
  r.Lose(5, "10.0.0.2:29400", 40);
  r.Tick(1400);  // ReadLeader; the lease (granted at 0) ends at 2000, leading only until 1400
  auto actions = r.election.Handle(
      LeaderRead{.present = false, .leader = "", .epoch = 0, .lease = 0, .sent_at = At(1400)});
  CHECK_FALSE(Has<Campaign>(actions));
  r.Renewed(1450);
  r.Tick(1500);  // read again, now on a renewed lease
  actions = r.election.Handle(
      LeaderRead{.present = false, .leader = "", .epoch = 0, .lease = 0, .sent_at = At(1500)});
  CHECK(Has<Campaign>(actions));
}
