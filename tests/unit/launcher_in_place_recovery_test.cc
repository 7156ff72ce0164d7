// InPlaceRecovery: one test per step of the table in
// launcher/decide/in_place_recovery.h, fed the worker group's view by hand with a
// hand-driven clock. Steps are compared as short lines ("pause", "paused").
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "launcher/decide/in_place_recovery.h"

namespace muster {
namespace {

using GroupState = WorkerGroup::State;
using Lines = std::vector<std::string>;
using namespace std::chrono_literals;

std::string Show(const RecoveryStep& step) {
  if (const auto* s = std::get_if<PauseBegan>(&step)) {
    return s->during_join ? "pause during join" : "pause";
  }
  if (std::holds_alternative<FailureKnown>(step)) return "failure known";
  if (std::holds_alternative<SurvivorsPaused>(step)) return "paused";
  const auto& ended = std::get<RecoveryEnded>(step);
  const char* how = ended.how == RecoveryEnded::How::kRecovered  ? "recovered"
                    : ended.how == RecoveryEnded::How::kFellBack ? "fell back"
                                                                 : "abandoned";
  return std::string(how) + " paused_ms=" + std::to_string(static_cast<int>(ended.paused_ms)) +
         " total_ms=" + std::to_string(static_cast<int>(ended.total_ms));
}

Lines Show(const RecoverySteps& steps) {
  Lines lines;
  for (const auto& step : steps) lines.push_back(Show(step));
  return lines;
}

RecoveryView Running() { return {}; }
RecoveryView Pausing(bool failure_known = true) {
  return {.state = GroupState::kRecovering, .failure_known = failure_known};
}
RecoveryView Paused() {
  return {.state = GroupState::kRecovering, .failure_known = true, .ready_to_join = true};
}
RecoveryView Joining() {
  return {.state = GroupState::kRecovering, .joining = true, .failure_known = true};
}

const Time kRecoveryEpoch{};

TEST_CASE("nothing happens while the group runs", "[in-place-recovery]") {
  InPlaceRecovery recovery;
  CHECK(recovery.OnGroupEvent(Running(), kRecoveryEpoch).empty());
  CHECK(recovery.OnGroupEvent(Running(), kRecoveryEpoch + 1ms).empty());
}

TEST_CASE("a failure paused in place is paused then known then paused then recovered once each",
          "[in-place-recovery]") {
  InPlaceRecovery recovery;
  // The failure is handled alone: the agent feeds the view again after it.
  CHECK(Show(recovery.OnGroupEvent(Pausing(), kRecoveryEpoch)) == Lines{"pause", "failure known"});
  CHECK(recovery.OnGroupEvent(Pausing(), kRecoveryEpoch + 1ms).empty());
  CHECK(Show(recovery.OnGroupEvent(Paused(), kRecoveryEpoch + 10ms)) == Lines{"paused"});
  CHECK(recovery.OnGroupEvent(Paused(), kRecoveryEpoch + 11ms).empty());
  recovery.OnRejoinSent(kRecoveryEpoch + 20ms);
  CHECK(recovery.OnGroupEvent(Joining(), kRecoveryEpoch + 25ms).empty());
  CHECK(Show(recovery.OnGroupEvent(Running(), kRecoveryEpoch + 50ms)) ==
        Lines{"recovered paused_ms=20 total_ms=50"});
  // Over: the group running on is nothing new.
  CHECK(recovery.OnGroupEvent(Running(), kRecoveryEpoch + 51ms).empty());
}

TEST_CASE("a hang probe's failure is known once the silent workers are killed",
          "[in-place-recovery]") {
  InPlaceRecovery recovery;
  CHECK(Show(recovery.OnGroupEvent(Pausing(/*failure_known=*/false), kRecoveryEpoch)) ==
        Lines{"pause"});
  CHECK(recovery.OnGroupEvent(Pausing(/*failure_known=*/false), kRecoveryEpoch + 1ms).empty());
  // The silent worker is killed as hung: its failure is known at once, but
  // the survivors are not ready to join until it exited.
  CHECK(Show(recovery.OnGroupEvent(Pausing(/*failure_known=*/true), kRecoveryEpoch + 1s)) ==
        Lines{"failure known"});
  CHECK(recovery.OnGroupEvent(Pausing(/*failure_known=*/true), kRecoveryEpoch + 1s).empty());
  CHECK(Show(recovery.OnGroupEvent(Paused(), kRecoveryEpoch + 1s + 5ms)) == Lines{"paused"});
}

TEST_CASE("a pause that cuts a join short pauses again and reports the new pause",
          "[in-place-recovery]") {
  InPlaceRecovery recovery;
  recovery.OnGroupEvent(Pausing(), kRecoveryEpoch);
  recovery.OnGroupEvent(Paused(), kRecoveryEpoch + 10ms);
  recovery.OnRejoinSent(kRecoveryEpoch + 20ms);
  recovery.OnGroupEvent(Joining(), kRecoveryEpoch + 21ms);
  // PauseAll: the group recovers again, not joining; the failure stays handled.
  CHECK(Show(recovery.OnGroupEvent(Pausing(), kRecoveryEpoch + 30ms)) ==
        Lines{"pause during join"});
  CHECK(Show(recovery.OnGroupEvent(Paused(), kRecoveryEpoch + 40ms)) == Lines{"paused"});
  recovery.OnRejoinSent(kRecoveryEpoch + 60ms);
  recovery.OnGroupEvent(Joining(), kRecoveryEpoch + 61ms);
  CHECK(Show(recovery.OnGroupEvent(Running(), kRecoveryEpoch + 70ms)) ==
        Lines{"recovered paused_ms=60 total_ms=70"});
}

TEST_CASE("a recovery the group gives up on falls back", "[in-place-recovery]") {
  InPlaceRecovery recovery;
  recovery.OnGroupEvent(Pausing(), kRecoveryEpoch);
  RecoveryView stopping{.state = GroupState::kStopping, .failure_known = true, .fell_back = true};
  CHECK(Show(recovery.OnGroupEvent(stopping, kRecoveryEpoch + 5ms)) ==
        Lines{"fell back paused_ms=5 total_ms=5"});
  CHECK(recovery.OnGroupEvent(stopping, kRecoveryEpoch + 6ms).empty());
}

TEST_CASE("a recovery stopped from outside is abandoned, not a fallback", "[in-place-recovery]") {
  InPlaceRecovery recovery;
  recovery.OnGroupEvent(Pausing(), kRecoveryEpoch);
  RecoveryView stopping{.state = GroupState::kStopping, .failure_known = true};
  CHECK(Show(recovery.OnGroupEvent(stopping, kRecoveryEpoch + 5ms)) ==
        Lines{"abandoned paused_ms=5 total_ms=5"});
}

TEST_CASE("the processes started for a recovery are counted from its pause",
          "[in-place-recovery]") {
  InPlaceRecovery recovery;
  recovery.OnGroupEvent(Pausing(), kRecoveryEpoch);
  recovery.OnReplacementsStarted(1);
  recovery.OnReplacementsStarted(2);
  CHECK(recovery.replacements_started() == 3);
  recovery.OnGroupEvent(Running(), kRecoveryEpoch + 1ms);
  recovery.OnGroupEvent(Pausing(), kRecoveryEpoch + 2ms);
  CHECK(recovery.replacements_started() == 0);
}

}  // namespace
}  // namespace muster
