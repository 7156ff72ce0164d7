// NodeMachine: this node's one decider. It holds the mode's follower
// (StaticFollower or ElasticFollower) with InPlaceRecovery, takes every event
// the agent sees (the rendezvous's news, the worker group's state after each
// of its events, signals, start failures, with `now` where time matters)
// and returns one list of actions for the agent to carry out, in order.
// Nothing here touches a process, a socket, the store or a clock.
//
// It also holds the --recovery rule, decided once (DecideRecovery): whether
// a failure may be recovered in place here. The agent asks it whether to
// open the workers' control channel and read their control lines; the dry
// run asks DecideRecovery itself.
//
// How one event flows, as rules (the followers' own tables say what each of
// their events does: static_follower.h, elastic_follower.h):
//   any event of a follower --------> the follower's actions, with ArmInPlace
//                                     dropped (and a start's left unset:
//                                     LaunchAttempt, LaunchGeneration) when
//                                     the node does not recover in place,
//                                     and each ReportFailureLocally
//                                     not in place followed by
//                                     ExplainNotInPlace when it does
//   OnGroupEvent (the group's state, after any group event), the recovery's
//   steps (in_place_recovery.h) in order:
//     PauseBegan -------------------> AnnouncePause
//     FailureKnown -----------------> the follower's OnWorkersPausing, then
//                                     ReadGroupAgain, and nothing after it:
//                                     what the agent did changed the group,
//                                     which it feeds here again
//     SurvivorsPaused --------------> the follower's OnWorkersPaused
//     RecoveryEnded ----------------> the follower's OnRecoveryEnded, then
//                                     AnnounceRecoveryEnded
//   an event for the other mode ----> nothing (REQUIRES: never sent)
//
// Tests: tests/unit/launcher_node_machine_test.cc drives whole scenarios
// from tables. Not thread-safe: the agent calls it from its one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "launcher/decide/elastic_follower.h"
#include "launcher/decide/in_place_recovery.h"
#include "launcher/decide/static_follower.h"
#include "launcher/plan/launch_options.h"
#include "launcher/plan/recovery_path.h"

namespace muster {

// RecoveryPath and DecideRecovery, the --recovery rule: plan/recovery_path.h.

// The followers' starts, with the recovery in place to arm decided by the
// --recovery rule: `in_place` is unset where the node does not recover in
// place. Static: StartAttemptWorkers; elastic: StartWorkers (their
// comments say the rest).
struct LaunchAttempt {
  int attempt = 0;
  std::optional<ArmInPlace> in_place;
};
struct LaunchGeneration {
  rdzv::Assignment assignment;
  std::optional<ArmInPlace> in_place;
};
// A recovery in place began pausing the survivors (log event=in_place_pause)
// in attempt `attempt`; `during_join`: a second pause, their join cut short.
struct AnnouncePause {
  int attempt = 0;
  bool during_join = false;
};
// A recovery in place ended, in attempt `attempt` (the one its survivors
// joined when recovered): log how.
struct AnnounceRecoveryEnded {
  int attempt = 0;
  RecoveryEnded ended;
};
// A failure restarts every worker although this node recovers in place:
// say which workers never announced it (`asked`: --recovery in-place asked
// for it, a warning; under auto, information).
struct ExplainNotInPlace {
  bool asked = false;
};
// Feed OnGroupEvent the group's state again, once the actions before this
// one are carried out.
struct ReadGroupAgain {};
// The group's state changed outside a group event (a start failed and the
// workers that did start are stopping): carry on as after a group event.
struct GroupChanged {};

using NodeAction =
    std::variant<LaunchAttempt, StartReplacements, RejoinAttempt, AttemptSucceeded,
                 LaunchGeneration, PauseWorkers, RejoinWorkers, ReportSucceeded, ReportFailure,
                 ClearCurrent, SealStore, LeaveRendezvous, StopWorkers, ReportFailureLocally,
                 ArmInPlace, AbandonRecovery, Finish, AnnouncePause, AnnounceRecoveryEnded,
                 ExplainNotInPlace, ReadGroupAgain, GroupChanged>;
using NodeActions = std::vector<NodeAction>;

// The worker group as OnGroupEvent reads it.
struct GroupView {
  RecoveryView recovery;
  // The group's first failure; set whenever recovery.failure_known.
  std::optional<LocalFailure> first_failure;
};
GroupView GroupViewOf(const WorkerGroup& group);

class NodeMachine {
 public:
  // `in_place_asked`: --recovery in-place (rather than auto) chose the path.
  NodeMachine(RecoveryPath recovery, bool in_place_asked, StaticFollower follower);
  NodeMachine(RecoveryPath recovery, bool in_place_asked, ElasticFollower follower);

  // Static runs: the node is ready (the warm process, if any, settled).
  NodeActions OnStart();
  // Elastic runs: the rendezvous client's news. `workers_can_pause`: every
  // running worker can be paused in place now (WorkerGroup::CanPauseAll).
  NodeActions OnAssignment(const rdzv::Assignment& assignment, bool workers_can_pause);
  NodeActions OnWaiting(bool workers_can_pause);
  NodeActions OnFence();
  NodeActions OnRunEnded(bool succeeded);
  NodeActions OnRendezvousFailed();

  // Both modes.
  NodeActions OnSignal(int sig);
  // The start (StartAttemptWorkers, StartWorkers) failed with `message`;
  // `workers_stopping`: some workers had started and are being stopped.
  NodeActions OnStartFailed(const std::string& message, bool workers_stopping);
  // After every event of the worker group (an exit, a control line, a tick,
  // a pause, stop or rejoin the agent asked for).
  NodeActions OnGroupEvent(const GroupView& group, Time now);
  // The survivors were told to rejoin now.
  void OnRejoinSent(Time now) { recovery_.OnRejoinSent(now); }
  // `count` processes started for the recovery under way.
  void OnReplacementsStarted(int count) { recovery_.OnReplacementsStarted(count); }
  // Every worker of the attempt exited (their output may still drain).
  void OnWorkersGone();
  // The attempt's output drained: its outcome is final.
  NodeActions OnWorkersSettled(const WorkersOutcome& outcome);

  bool elastic() const { return std::holds_alternative<ElasticFollower>(follower_); }
  RecoveryPath recovery_path() const { return recovery_path_; }
  bool recovers_in_place() const { return recovery_path_ == RecoveryPath::kInPlace; }
  // The attempt whose workers run here (static_follower.h, "Counters"):
  // static, the follower's; elastic, that of the generation entered last.
  int attempt() const;
  // Processes started for the recovery under way (or the last one).
  int replacements_started() const { return recovery_.replacements_started(); }
  const StaticFollower* static_follower() const { return std::get_if<StaticFollower>(&follower_); }
  const ElasticFollower* elastic_follower() const {
    return std::get_if<ElasticFollower>(&follower_);
  }

 private:
  // Takes a follower's answer into `out`, under the --recovery rule.
  void Take(const StaticActions& actions, NodeActions& out);
  void Take(const FollowerActions& actions, NodeActions& out);
  template <typename Action>
  void TakeOne(const Action& action, NodeActions& out);

  RecoveryPath recovery_path_;
  bool in_place_asked_;
  std::variant<StaticFollower, ElasticFollower> follower_;
  InPlaceRecovery recovery_;
  // Elastic: the generation of the last StartWorkers or RejoinWorkers.
  uint64_t entered_generation_ = 0;
};

}  // namespace muster
