#include <catch2/catch.hpp>

#include "common/clock.h"
#include "rendezvous/client/contact_wait.h"

using muster::Time;
using muster::rdzv::ContactWait;
using muster::rdzv::Endpoint;
using muster::rdzv::SecondsText;
using namespace std::chrono_literals;

namespace {
const Time t0{};
const Endpoint kRefusing{"127.0.0.1", 1};
const Endpoint kUnknown{"nosuchhost.invalid", 29400};
}  // namespace

TEST_CASE("a short wait says nothing: agents often start before the host", "[contact_wait]") {
  ContactWait wait(5s, "join_timeout", t0);
  CHECK_FALSE(wait.OnAttemptFailed(kRefusing, "refused the connection", t0 + 100ms));
  CHECK_FALSE(wait.OnAttemptFailed(kRefusing, "refused the connection", t0 + 1900ms));
  CHECK_FALSE(wait.Expired(t0 + 4999ms));
}

TEST_CASE("a long wait warns, naming the endpoint, its cause and the time left", "[contact_wait]") {
  ContactWait wait(5s, "join_timeout", t0);
  auto warning = wait.OnAttemptFailed(kRefusing, "refused the connection", t0 + 2s);
  REQUIRE(warning);
  CHECK(*warning ==
        "waiting for the rendezvous: 127.0.0.1:1 refused the connection; giving up in 3 s "
        "(join_timeout 5 s)");
}

TEST_CASE("warnings come at most every warn_every", "[contact_wait]") {
  ContactWait wait(60s, "read_timeout", t0, 2s, 5s);
  CHECK(wait.OnAttemptFailed(kRefusing, "refused the connection", t0 + 2s));
  CHECK_FALSE(wait.OnAttemptFailed(kRefusing, "refused the connection", t0 + 3s));
  CHECK_FALSE(wait.OnAttemptFailed(kRefusing, "refused the connection", t0 + 6900ms));
  CHECK(wait.OnAttemptFailed(kRefusing, "refused the connection", t0 + 7s));
}

TEST_CASE("the give-up line names every endpoint with its latest cause", "[contact_wait]") {
  ContactWait wait(5s, "join_timeout", t0);
  wait.OnAttemptFailed(kUnknown, "does not resolve (Host not found)", t0 + 10ms);
  wait.OnAttemptFailed(kRefusing, "did not answer within 2 s", t0 + 20ms);
  wait.OnAttemptFailed(kRefusing, "refused the connection", t0 + 30ms);
  CHECK(wait.Expired(t0 + 5s));
  CHECK(wait.GiveUpMessage() ==
        "the rendezvous was not reached within join_timeout 5 s: nosuchhost.invalid:29400 does "
        "not resolve (Host not found), 127.0.0.1:1 refused the connection");
}

TEST_CASE("a wait with no finished attempt says so", "[contact_wait]") {
  ContactWait wait(1500ms, "read_timeout", t0);
  CHECK(wait.GiveUpMessage() ==
        "the rendezvous was not reached within read_timeout 1.5 s: no connection attempt "
        "finished");
}

TEST_CASE("contact ends the wait for good", "[contact_wait]") {
  ContactWait wait(5s, "join_timeout", t0);
  wait.OnContact();
  CHECK(wait.contacted());
  CHECK_FALSE(wait.Expired(t0 + 1h));
  CHECK_FALSE(wait.OnAttemptFailed(kRefusing, "refused the connection", t0 + 1h));
}

TEST_CASE("durations read as --rdzv-conf writes them", "[contact_wait]") {
  CHECK(SecondsText(600s) == "600");
  CHECK(SecondsText(2500ms) == "2.5");
  CHECK(SecondsText(250ms) == "0.25");
  CHECK(SecondsText(1000ms) == "1");
}

TEST_CASE("the first contact is bounded by read_timeout or join_timeout, the shorter",
          "[contact_wait]") {
  muster::rdzv::Settings settings;
  CHECK(muster::rdzv::FirstContactLimit(settings) ==
        std::pair{60000ms, std::string("read_timeout")});
  settings.join_timeout = 5s;
  CHECK(muster::rdzv::FirstContactLimit(settings) ==
        std::pair{5000ms, std::string("join_timeout")});
}
