// EndpointWalk (rendezvous/client/endpoint_walk.h): the order an agent tries
// replicas in, and the pauses between sweeps.
#include <catch2/catch.hpp>

#include "rendezvous/client/endpoint_walk.h"

namespace muster::rdzv {
namespace {

using std::chrono::milliseconds;

const Endpoint kA{"10.0.0.1", 29400};
const Endpoint kB{"10.0.0.2", 29400};
const Endpoint kC{"10.0.0.3", 29400};

TEST_CASE("one endpoint backs off as a single daemon always did", "[rdzv][client][walk]") {
  EndpointWalk walk({kA});
  CHECK_FALSE(walk.replicated());
  CHECK(walk.AfterFailure(false, 0.999) == milliseconds(49));
  CHECK(walk.AfterFailure(false, 0.999) == milliseconds(99));
  CHECK(walk.AfterFailure(false, 0.999) == milliseconds(199));
  CHECK(walk.AfterFailure(false, 0.999) == milliseconds(399));
  CHECK(walk.AfterFailure(false, 0.999) == milliseconds(499));  // capped
  CHECK(walk.Current() == kA);
  walk.AfterWelcome();
  CHECK(walk.AfterFailure(false, 0.0) == milliseconds(25));  // from the start again
}

TEST_CASE("failed replicas are passed at once, a whole sweep pauses", "[rdzv][client][walk]") {
  EndpointWalk walk({kA, kB, kC});
  CHECK(walk.replicated());
  CHECK(walk.Current() == kA);
  CHECK(walk.AfterFailure(false, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kB);
  CHECK(walk.AfterFailure(false, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kC);
  CHECK(walk.AfterFailure(false, 0.999) == milliseconds(49));  // nobody answered: backoff
  CHECK(walk.Current() == kA);
  CHECK(walk.AfterFailure(false, 0.5) == milliseconds(0));
  CHECK(walk.AfterFailure(false, 0.5) == milliseconds(0));
  CHECK(walk.AfterFailure(false, 0.999) == milliseconds(99));
}

TEST_CASE("during an election the sweeps come at the standbys' poll period",
          "[rdzv][client][walk]") {
  EndpointWalk walk({kA, kB, kC});
  for (int sweep = 0; sweep < 5; ++sweep) {
    CHECK(walk.AfterFailure(false, 0.999) == milliseconds(0));  // A: the dead leader
    CHECK(walk.AfterFailure(true, 0.999) == milliseconds(0));   // B: no_leader
    CHECK(walk.AfterFailure(true, 0.999) == milliseconds(99));  // C: no_leader
  }
}

TEST_CASE("a standby's redirect is followed at once, a failed leader once per sweep",
          "[rdzv][client][walk]") {
  EndpointWalk walk({kA, kB, kC});
  // A is the dead leader whose lease still runs: B and C still name it.
  CHECK(walk.AfterFailure(false, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kB);
  CHECK(walk.AfterRedirect(kA, 0.5) == milliseconds(0));  // A failed in this sweep: not again
  CHECK(walk.Current() == kC);
  CHECK(walk.AfterRedirect(kA, 0.999) == milliseconds(99));  // sweep over, someone answered
  CHECK(walk.Current() == kA);                               // named, and first in the list anyway
  CHECK(walk.AfterFailure(false, 0.5) == milliseconds(0));
  // C took the lead: B now names it, and the walk goes there before C's turn.
  CHECK(walk.AfterRedirect(kC, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kC);
  walk.AfterWelcome();
  // C dies later: the walk goes on after C.
  CHECK(walk.AfterFailure(false, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kA);
}

TEST_CASE("a leader outside the list is followed and then left", "[rdzv][client][walk]") {
  const Endpoint other{"leader.example", 29401};
  EndpointWalk walk({kA, kB});
  CHECK(walk.AfterRedirect(other, 0.5) == milliseconds(0));
  CHECK(walk.Current() == other);
  CHECK(walk.AfterFailure(false, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kB);
  // The sweep is over: the named leader comes first after the pause.
  CHECK(walk.AfterRedirect(other, 0.999) == milliseconds(99));
  CHECK(walk.Current() == other);
  CHECK(walk.AfterFailure(false, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kA);
}

TEST_CASE("a standby naming itself is not followed", "[rdzv][client][walk]") {
  EndpointWalk walk({kA, kB});
  CHECK(walk.AfterRedirect(kA, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kB);
}

TEST_CASE("a suspect endpoint is passed by until its suspicion runs out", "[rdzv][client][walk]") {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0{std::chrono::seconds(100)};
  EndpointWalk walk({kA, kB, kC});
  // A, the leader, went quiet: the probe starts after it.
  walk.Suspect(kA, t0);
  CHECK(walk.IsSuspect(kA, t0));
  CHECK(walk.At(t0).AfterFailure(false, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kB);
  CHECK(walk.At(t0).AfterFailure(true, 0.999) == milliseconds(0));
  CHECK(walk.Current() == kC);
  // B and C answered: the sweep is over without A's timeout.
  CHECK(walk.At(t0).AfterFailure(true, 0.999) == milliseconds(99));
  CHECK(walk.Current() == kB);
  CHECK(walk.At(t0).AfterFailure(true, 0.999) == milliseconds(0));
  CHECK(walk.Current() == kC);
  CHECK(walk.At(t0).AfterFailure(true, 0.999) == milliseconds(99));
  // Later A is tried again.
  const auto later = t0 + EndpointWalk::kSuspectFor;
  CHECK_FALSE(walk.IsSuspect(kA, later));
  CHECK(walk.At(later).AfterFailure(true, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kC);
  CHECK(walk.At(later).AfterFailure(true, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kA);
}

TEST_CASE("when every endpoint is suspect, every one is tried", "[rdzv][client][walk]") {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0{std::chrono::seconds(100)};
  EndpointWalk walk({kA, kB});
  walk.Suspect(kA, t0);
  walk.Suspect(kB, t0);
  CHECK(walk.At(t0).AfterFailure(false, 0.5) == milliseconds(0));
  CHECK(walk.Current() == kB);
  CHECK(walk.At(t0).AfterFailure(false, 0.999) == milliseconds(49));
  CHECK(walk.Current() == kA);
}

TEST_CASE("the leader's text is HOST:PORT, IPv6 in brackets", "[rdzv][client][walk]") {
  auto v4 = ParseLeader("10.0.0.2:29400");
  REQUIRE(v4.ok());
  CHECK(*v4 == kB);
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
