// InPlaceRecovery: follows one recovery in place of this node's workers from
// the worker group's point of view, in both modes, as a pure decision
// object. WorkerGroup (worker_group.h) pauses and rejoins the workers;
// StaticFollower or ElasticFollower decides what the node does about the
// failure and where the survivors go next. This object says when a recovery
// began, when its failure became known, when its survivors are all paused,
// and how it ended, each once; the agent feeds it the group's view after
// every group event and carries out what it returns. It reads no clock:
// events carry `now`. Tests: tests/unit/launcher_in_place_recovery_test.cc.
//
// clang-format off
// Steps (returned by OnGroupEvent, in this order, from the view it is given):
//   the group entered kRecovering, no recovery under way -------> PauseBegan
//   the survivors were told to rejoin (OnRejoinSent), and the
//   group recovers again without joining (PauseAll cut the
//   join short: one recovery, paused twice) --------------------> PauseBegan(during join)
//   kRecovering, a failure known, none handled yet --------------> FailureKnown, and nothing after
//                                                                   it: the agent carries it out
//                                                                   and feeds the group's view
//                                                                   again
//   ready to join, first time since the pause began -------------> SurvivorsPaused
//   ready to join, or still kRecovering ------------------------> nothing more
//   kRunning again ----------------------------------------------> RecoveryEnded(recovered)
//   anything else (the group stops its workers) -----------------> RecoveryEnded(fell back, or
//                                                                   abandoned when stopped from
//                                                                   outside)
// clang-format on
//
// Not thread-safe: the agent calls it from its one thread.
#pragma once

#include <optional>
#include <variant>
#include <vector>

#include "launcher/process/worker_group.h"

namespace muster {

// What the worker group says after an event, as this object reads it.
struct RecoveryView {
  WorkerGroup::State state = WorkerGroup::State::kRunning;
  bool joining = false;        // WorkerGroup::joining()
  bool failure_known = false;  // WorkerGroup::failures() is not empty
  bool ready_to_join = false;  // WorkerGroup::ready_to_join()
  bool fell_back = false;      // WorkerGroup::fallback_reason() is not empty
};
RecoveryView RecoveryViewOf(const WorkerGroup& group);

// The group began pausing the survivors (log event=in_place_pause);
// `during_join`: a second pause, the survivors' join cut short.
struct PauseBegan {
  bool during_join = false;
};
// The failure the recovery handles is known: report it, and tell the mode's
// follower (OnWorkersPausing). Always the last step of its list.
struct FailureKnown {};
// Every survivor is paused: the mode's follower hears OnWorkersPaused.
struct SurvivorsPaused {};
// The recovery is over. `paused_ms`: from its failure until the survivors
// were last told to rejoin; `total_ms`: until now.
struct RecoveryEnded {
  enum class How { kRecovered, kFellBack, kAbandoned };
  How how = How::kRecovered;
  double paused_ms = 0;
  double total_ms = 0;
};

using RecoveryStep = std::variant<PauseBegan, FailureKnown, SurvivorsPaused, RecoveryEnded>;
using RecoverySteps = std::vector<RecoveryStep>;

class InPlaceRecovery {
 public:
  // After every event of the worker group (an exit, a control message, a
  // tick, a pause or rejoin the agent asked for).
  RecoverySteps OnGroupEvent(const RecoveryView& view, Time now);
  // The survivors were told to rejoin now.
  void OnRejoinSent(Time now) { rejoin_sent_ = now; }
  // `count` processes started for the recovery under way.
  void OnReplacementsStarted(int count) { replacements_started_ += count; }

  // Processes started for the recovery under way (or the last one).
  int replacements_started() const { return replacements_started_; }

 private:
  std::optional<Time> began_;        // the recovery under way began (its failure)
  std::optional<Time> rejoin_sent_;  // its survivors were last told to rejoin
  bool paused_reported_ = false;     // SurvivorsPaused was returned for this pause
  bool failure_handled_ = false;     // FailureKnown was returned for this recovery
  int replacements_started_ = 0;
};

}  // namespace muster
