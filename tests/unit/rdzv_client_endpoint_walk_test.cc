// EndpointWalk (rendezvous/client/endpoint_walk.h): the order an agent tries
// replicas in, and the pauses between sweeps.
#include <catch2/catch.hpp>

#include "rendezvous/client/endpoint_walk.h"

#include "common/clock.h"

namespace muster::rdzv {
namespace {

using std::chrono::milliseconds;

const Endpoint kFirst{"10.0.0.1", 29400};
const Endpoint kSecond{"10.0.0.2", 29400};
const Endpoint kThird{"10.0.0.3", 29400};
constexpr auto kNoAnswer = EndpointWalk::AttemptEnd::kNoAnswer;
constexpr auto kStandbyAnswered = EndpointWalk::AttemptEnd::kStandbyAnswered;

TEST_CASE("one endpoint backs off as a single daemon always did", "[rdzv][client][walk]") {
  EndpointWalk walk({kFirst});
  CHECK_FALSE(walk.replicated());
  CHECK(walk.AfterFailure(kNoAnswer, 0.999) == milliseconds(49));
  CHECK(walk.AfterFailure(kNoAnswer, 0.999) == milliseconds(99));
  CHECK(walk.AfterFailure(kNoAnswer, 0.999) == milliseconds(199));
  CHECK(walk.AfterFailure(kNoAnswer, 0.999) == milliseconds(399));
  CHECK(walk.AfterFailure(kNoAnswer, 0.999) == milliseconds(499));  // capped
  CHECK(walk.Current() == kFirst);
  walk.AfterWelcome();
  CHECK(walk.AfterFailure(kNoAnswer, 0.0) == milliseconds(25));  // from the start again
}

TEST_CASE("failed replicas are passed at once, a whole sweep pauses", "[rdzv][client][walk]") {
  EndpointWalk walk({kFirst, kSecond, kThird});
  CHECK(walk.replicated());
  CHECK(walk.Current() == kFirst);
  CHECK(walk.AfterFailure(kNoAnswer, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kSecond);
  CHECK(walk.AfterFailure(kNoAnswer, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kThird);
  CHECK(walk.AfterFailure(kNoAnswer, 0.999) == milliseconds(49));  // nobody answered: backoff
  CHECK(walk.Current() == kFirst);
  CHECK(walk.AfterFailure(kNoAnswer, 0.5) == milliseconds(0));
  CHECK(walk.AfterFailure(kNoAnswer, 0.5) == milliseconds(0));
  CHECK(walk.AfterFailure(kNoAnswer, 0.999) == milliseconds(99));
}

TEST_CASE("during an election the sweeps come at the standbys' poll period",
          "[rdzv][client][walk]") {
  EndpointWalk walk({kFirst, kSecond, kThird});
  for (int sweep = 0; sweep < 5; ++sweep) {
    CHECK(walk.AfterFailure(kNoAnswer, 0.999) == milliseconds(0));          // A: the dead leader
    CHECK(walk.AfterFailure(kStandbyAnswered, 0.999) == milliseconds(0));   // B: no_leader
    CHECK(walk.AfterFailure(kStandbyAnswered, 0.999) == milliseconds(99));  // C: no_leader
  }
}

TEST_CASE("once fenced, a sweep a standby answered in backs off", "[rdzv][client][walk]") {
  EndpointWalk walk({kFirst, kSecond, kThird});
  walk.set_pace(EndpointWalk::Pace::kBackoff);
  CHECK(walk.AfterFailure(kNoAnswer, 0.999) == milliseconds(0));         // A: the dead leader
  CHECK(walk.AfterFailure(kStandbyAnswered, 0.999) == milliseconds(0));  // B: no_leader
  CHECK(walk.AfterFailure(kStandbyAnswered, 0.999) == milliseconds(49));
  CHECK(walk.AfterFailure(kNoAnswer, 0.999) == milliseconds(0));
  CHECK(walk.AfterFailure(kStandbyAnswered, 0.999) == milliseconds(0));
  CHECK(walk.AfterFailure(kStandbyAnswered, 0.999) == milliseconds(99));
  walk.set_pace(EndpointWalk::Pace::kElection);  // served again
  CHECK(walk.AfterFailure(kNoAnswer, 0.999) == milliseconds(0));
  CHECK(walk.AfterFailure(kStandbyAnswered, 0.999) == milliseconds(0));
  CHECK(walk.AfterFailure(kStandbyAnswered, 0.999) == milliseconds(99));
}

TEST_CASE("a standby's redirect is followed at once, a failed leader once per sweep",
          "[rdzv][client][walk]") {
  EndpointWalk walk({kFirst, kSecond, kThird});
  // A is the dead leader whose lease still runs: B and C still name it.
  CHECK(walk.AfterFailure(kNoAnswer, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kSecond);
  CHECK(walk.AfterRedirect(kFirst, 0.5) == milliseconds(0));  // A failed in this sweep: not again
  CHECK(walk.Current() == kThird);
  CHECK(walk.AfterRedirect(kFirst, 0.999) == milliseconds(99));  // sweep over, someone answered
  CHECK(walk.Current() == kFirst);  // named, and first in the list anyway
  CHECK(walk.AfterFailure(kNoAnswer, 0.5) == milliseconds(0));
  // C took the lead: B now names it, and the walk goes there before C's turn.
  CHECK(walk.AfterRedirect(kThird, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kThird);
  walk.AfterWelcome();
  // C dies later: the walk goes on after C.
  CHECK(walk.AfterFailure(kNoAnswer, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kFirst);
}

TEST_CASE("a leader outside the list is followed and then left", "[rdzv][client][walk]") {
  const Endpoint other{"leader.example", 29401};
  EndpointWalk walk({kFirst, kSecond});
  CHECK(walk.AfterRedirect(other, 0.5) == milliseconds(0));
  CHECK(walk.Current() == other);
  CHECK(walk.AfterFailure(kNoAnswer, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kSecond);
  // The sweep is over: the named leader comes first after the pause.
  CHECK(walk.AfterRedirect(other, 0.999) == milliseconds(99));
  CHECK(walk.Current() == other);
  CHECK(walk.AfterFailure(kNoAnswer, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kFirst);
}

TEST_CASE("a standby naming itself is not followed", "[rdzv][client][walk]") {
  EndpointWalk walk({kFirst, kSecond});
  CHECK(walk.AfterRedirect(kFirst, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kSecond);
}

TEST_CASE("a suspect endpoint is passed by until its suspicion runs out", "[rdzv][client][walk]") {
  const Time t0{std::chrono::seconds(100)};
  EndpointWalk walk({kFirst, kSecond, kThird});
  // A, the leader, went quiet: the probe starts after it.
  walk.Suspect(kFirst, t0);
  CHECK(walk.IsSuspect(kFirst, t0));
  CHECK(walk.At(t0).AfterFailure(kNoAnswer, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kSecond);
  CHECK(walk.LeftInSweep() == 2);  // B and C, not the suspect A
  CHECK(walk.At(t0).AfterFailure(kStandbyAnswered, 0.999) == milliseconds(0));
  CHECK(walk.Current() == kThird);
  CHECK(walk.LeftInSweep() == 1);  // C alone shares the time before the fence
  // B and C answered: the sweep is over without A's timeout.
  CHECK(walk.At(t0).AfterFailure(kStandbyAnswered, 0.999) == milliseconds(99));
  CHECK(walk.Current() == kSecond);
  CHECK(walk.At(t0).AfterFailure(kStandbyAnswered, 0.999) == milliseconds(0));
  CHECK(walk.Current() == kThird);
  CHECK(walk.At(t0).AfterFailure(kStandbyAnswered, 0.999) == milliseconds(99));
  // Later A is tried again.
  const auto later = t0 + EndpointWalk::kSuspectFor;
  CHECK_FALSE(walk.IsSuspect(kFirst, later));
  CHECK(walk.At(later).AfterFailure(kStandbyAnswered, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kThird);
  CHECK(walk.At(later).AfterFailure(kStandbyAnswered, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kFirst);
}

TEST_CASE("a leader elected since it failed is followed, suspect or not", "[rdzv][client][walk]") {
  const Time t0{std::chrono::seconds(100)};
  EndpointWalk walk({kFirst, kSecond, kThird});
  // B timed out while its link was down, and C, the leader, died.
  walk.Suspect(kSecond, t0);
  walk.At(t0);
  CHECK(walk.Current() == kFirst);
  // A still names the old leader C: C is tried and fails; B is passed by,
  // since A answered.
  CHECK(walk.At(t0).AfterRedirect(kThird, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kThird);
  CHECK(walk.At(t0).AfterFailure(kNoAnswer, 0.999) == milliseconds(99));
  CHECK(walk.Current() == kFirst);
  // Without a newer epoch, A naming B is not followed while B is suspect.
  CHECK(walk.At(t0).AfterRedirect(kSecond, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kThird);
  CHECK(walk.At(t0).AfterFailure(kNoAnswer, 0.999) == milliseconds(99));
  CHECK(walk.Current() == kFirst);
  // B won the election since: followed at once, and no longer suspect.
  CHECK(walk.At(t0).AfterRedirect(kSecond, 0.5, /*newly_elected=*/true) == milliseconds(0));
  CHECK(walk.Current() == kSecond);
  CHECK_FALSE(walk.IsSuspect(kSecond, t0));
}

TEST_CASE("a leader elected after it answered as a standby is followed in the same sweep",
          "[rdzv][client][walk]") {
  const Endpoint kD{"10.0.0.4", 29400};
  EndpointWalk walk({kFirst, kSecond, kThird, kD});
  CHECK(walk.AfterFailure(kNoAnswer, 0.5) == milliseconds(0));  // A: the dead leader
  CHECK(walk.Current() == kSecond);
  CHECK(walk.AfterFailure(kStandbyAnswered, 0.5) == milliseconds(0));  // B: no leader yet
  CHECK(walk.Current() == kThird);
  // C names B, just elected: B is tried now, not after D and a pause.
  CHECK(walk.AfterRedirect(kSecond, 0.5, /*newly_elected=*/true) == milliseconds(0));
  CHECK(walk.Current() == kSecond);
  // The same answer of an epoch heard before: B failed in this sweep.
  EndpointWalk again({kFirst, kSecond, kThird, kD});
  CHECK(again.AfterFailure(kNoAnswer, 0.5) == milliseconds(0));
  CHECK(again.AfterFailure(kStandbyAnswered, 0.5) == milliseconds(0));
  CHECK(again.AfterRedirect(kSecond, 0.5) == milliseconds(0));
  CHECK(again.Current() == kD);
}

TEST_CASE("a sweep nobody answered goes on to the suspects before it pauses",
          "[rdzv][client][walk]") {
  const Time t0{std::chrono::seconds(100)};
  EndpointWalk walk({kFirst, kSecond, kThird});
  // B and C timed out during a partition that has just healed (still
  // suspect), and A, which served since, was killed: it refuses.
  walk.Suspect(kSecond, t0);
  walk.Suspect(kThird, t0);
  CHECK(walk.At(t0).AfterFailure(kNoAnswer, 0.999) == milliseconds(0));
  CHECK(walk.Current() == kSecond);  // not A again after a backoff
  // B answers as a standby that knows no leader: it is no longer suspect.
  walk.Answered();
  CHECK_FALSE(walk.IsSuspect(kSecond, t0));
  CHECK(walk.IsSuspect(kThird, t0));
  CHECK(walk.At(t0).AfterFailure(kStandbyAnswered, 0.999) == milliseconds(0));
  CHECK(walk.Current() == kThird);  // the sweep finishes what it began
  CHECK(walk.At(t0).AfterFailure(kNoAnswer, 0.999) == milliseconds(99));
  CHECK(walk.Current() == kFirst);
  // The next sweep heard B: C, still suspect, is passed by.
  CHECK(walk.At(t0).AfterFailure(kNoAnswer, 0.999) == milliseconds(0));
  CHECK(walk.Current() == kSecond);
  walk.Answered();
  CHECK(walk.At(t0).AfterFailure(kStandbyAnswered, 0.999) == milliseconds(99));
  CHECK(walk.Current() == kFirst);
}

TEST_CASE("an endpoint that serves is no longer suspect", "[rdzv][client][walk]") {
  const Time t0{std::chrono::seconds(100)};
  EndpointWalk walk({kFirst, kSecond});
  walk.Suspect(kFirst, t0);
  walk.At(t0).AfterWelcome();
  CHECK_FALSE(walk.IsSuspect(kFirst, t0));
  // Its close later is one refusal among candidates, not a suspect's.
  CHECK(walk.At(t0).AfterFailure(kNoAnswer, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kSecond);
}

TEST_CASE("when every endpoint is suspect, every one is tried", "[rdzv][client][walk]") {
  const Time t0{std::chrono::seconds(100)};
  EndpointWalk walk({kFirst, kSecond});
  walk.Suspect(kFirst, t0);
  walk.Suspect(kSecond, t0);
  CHECK(walk.At(t0).AfterFailure(kNoAnswer, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kSecond);
  CHECK(walk.At(t0).AfterFailure(kNoAnswer, 0.999) == milliseconds(49));
  CHECK(walk.Current() == kFirst);
}

TEST_CASE("the leader's text is HOST:PORT, IPv6 in brackets", "[rdzv][client][walk]") {
  auto v4 = ParseLeader("10.0.0.2:29400");
  REQUIRE(v4.ok());
  CHECK(*v4 == kSecond);
  auto v6 = ParseLeader("[fd00::2]:29400");
  REQUIRE(v6.ok());
  CHECK(v6->host == "fd00::2");
  CHECK(v6->Text() == "[fd00::2]:29400");
  auto no_port = ParseLeader("10.0.0.2");
  REQUIRE_FALSE(no_port.ok());
  CHECK_THAT(no_port.status().message(), Catch::Contains("'10.0.0.2'"));
  CHECK_FALSE(ParseLeader("a:b:c").ok());
}

}  // namespace
}  // namespace muster::rdzv
