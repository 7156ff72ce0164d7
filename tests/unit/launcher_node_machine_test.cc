// NodeMachine: whole scenarios of one node, each a table of events and the
// actions the machine answers, as FakeCluster plays the daemon's. Events in,
// actions out as short lines ("launch attempt=1 in place", "stop SIGTERM");
// the group's state is given as the agent reads it after each group event.
// The followers' own rules have their tests (launcher_static_follower_test,
// launcher_elastic_follower_test); these show how the machine joins them to
// the recovery in place and the --recovery rule.
#include <catch2/catch.hpp>
#include <csignal>
#include <functional>
#include <string>
#include <vector>

#include "common/exhaustive_visit.h"
#include "launcher/decide/node_machine.h"

namespace muster {
namespace {

using namespace std::chrono_literals;
using Lines = std::vector<std::string>;
using GroupState = WorkerGroup::State;

std::string Armed(const std::optional<ArmInPlace>& in_place) {
  if (!in_place) return "";
  return " in place pause=" + std::to_string(in_place->generation) +
         (in_place->allowed ? "" : " (not allowed)");
}

std::string Show(const NodeAction& action) {
  return VisitEvery(
      action,
      [](const LaunchAttempt& a) {
        return "launch attempt=" + std::to_string(a.attempt) + Armed(a.in_place);
      },
      [](const StartReplacements& a) {
        return "start replacements attempt=" + std::to_string(a.attempt);
      },
      [](const RejoinAttempt& a) { return "rejoin attempt=" + std::to_string(a.attempt); },
      [](const AttemptSucceeded& a) { return "succeeded attempt=" + std::to_string(a.attempt); },
      [](const LaunchGeneration& a) {
        return "launch gen=" + std::to_string(a.assignment.generation) + Armed(a.in_place);
      },
      [](const PauseWorkers&) { return std::string("pause"); },
      [](const RejoinWorkers& a) {
        return "rejoin gen=" + std::to_string(a.assignment.generation);
      },
      [](const ReportSucceeded& a) {
        return "report succeeded gen=" + std::to_string(a.generation);
      },
      [](const ReportFailure& a) {
        return "report failure gen=" + std::to_string(a.generation) +
               " code=" + std::to_string(a.exit_code);
      },
      [](const ClearCurrent&) { return std::string("clear current"); },
      [](const SealStore&) { return std::string("seal store"); },
      [](const LeaveRendezvous&) { return std::string("leave"); },
      [](const StopWorkers& a) { return "stop " + std::to_string(a.signal); },
      [](const ReportFailureLocally& a) {
        return "failure report restart=" + std::to_string(a.restart_count) + " of " +
               std::to_string(a.max_restarts) + (a.in_place ? " in place" : "");
      },
      [](const ArmInPlace& a) { return "arm" + Armed(a); },
      [](const AbandonRecovery&) { return std::string("abandon recovery"); },
      [](const Finish& a) { return "finish " + std::to_string(a.exit_code); },
      [](const AnnouncePause& a) {
        return "announce pause attempt=" + std::to_string(a.attempt) +
               (a.during_join ? " during join" : "");
      },
      [](const AnnounceRecoveryEnded& a) {
        const char* how = a.ended.how == RecoveryEnded::How::kRecovered  ? "recovered"
                          : a.ended.how == RecoveryEnded::How::kFellBack ? "fell back"
                                                                         : "abandoned";
        return std::string("announce ") + how + " attempt=" + std::to_string(a.attempt);
      },
      [](const ExplainNotInPlace& a) {
        return std::string("explain not in place") + (a.asked ? " (warning)" : "");
      },
      [](const ReadGroupAgain&) { return std::string("read group again"); },
      [](const GroupChanged&) { return std::string("group changed"); });
}

// One event of a scenario, with the actions expected for it.
struct Step {
  std::string what;
  std::function<NodeActions(NodeMachine&, Time)> event;
  Lines expect;
};

void Play(NodeMachine& machine, const std::vector<Step>& steps) {
  Time now = Time{} + 10s;
  for (const Step& step : steps) {
    INFO("step: " << step.what);
    Lines shown;
    for (const NodeAction& action : step.event(machine, now)) shown.push_back(Show(action));
    CHECK(shown == step.expect);
    now += 100ms;
  }
}

// Events.
auto Start() {
  return [](NodeMachine& m, Time) { return m.OnStart(); };
}
auto Assign(uint64_t generation, int restart_count, bool workers_can_pause) {
  return [=](NodeMachine& m, Time) {
    rdzv::Assignment a;
    a.generation = generation;
    a.restart_count = restart_count;
    a.max_restarts = 3;
    a.group_world_size = 2;
    a.local_world_size = 2;
    a.world_size = 4;
    return m.OnAssignment(a, workers_can_pause);
  };
}
auto Waiting(bool workers_can_pause) {
  return [=](NodeMachine& m, Time) { return m.OnWaiting(workers_can_pause); };
}
auto Signal(int sig) {
  return [=](NodeMachine& m, Time) { return m.OnSignal(sig); };
}
auto StartFailed(bool workers_stopping) {
  return [=](NodeMachine& m, Time) { return m.OnStartFailed("no such file", workers_stopping); };
}
// Every worker exited and their output drained as `outcome`.
auto Ended(GroupState state, std::optional<int> code = std::nullopt) {
  return [=](NodeMachine& m, Time) {
    m.OnWorkersGone();
    WorkersOutcome outcome;
    outcome.state = state;
    outcome.root_cause_exit_code = code;
    return m.OnWorkersSettled(outcome);
  };
}
auto Rejoined() {
  return [](NodeMachine& m, Time now) {
    m.OnRejoinSent(now);
    return NodeActions{};
  };
}

// The group's state after a group event.
GroupView View(GroupState state, bool failure = false, bool ready = false, bool joining = false,
               bool fell_back = false) {
  GroupView view{.recovery = {.state = state,
                              .joining = joining,
                              .failure_known = failure,
                              .ready_to_join = ready,
                              .fell_back = fell_back},
                 .first_failure = std::nullopt};
  if (failure) view.first_failure = LocalFailure{137, "killed by SIGKILL"};
  return view;
}
auto Group(GroupView view) {
  return [=](NodeMachine& m, Time now) { return m.OnGroupEvent(view, now); };
}
const GroupView kRunning = View(GroupState::kRunning);
const GroupView kPausingAfterFailure = View(GroupState::kRecovering, /*failure=*/true);
const GroupView kPausing = View(GroupState::kRecovering);
const GroupView kPausedAfterFailure = View(GroupState::kRecovering, true, /*ready=*/true);
const GroupView kPaused = View(GroupState::kRecovering, false, /*ready=*/true);
const GroupView kJoining = View(GroupState::kRecovering, false, false, /*joining=*/true);
const GroupView kFellBack = View(GroupState::kStopping, true, false, false, /*fell_back=*/true);
const GroupView kStoppedFromOutside = View(GroupState::kStopping, true);

NodeMachine Static(LaunchOptions::Recovery recovery, int nodes, int max_restarts) {
  return NodeMachine(DecideRecovery(recovery, /*elastic=*/false, nodes),
                     recovery == LaunchOptions::Recovery::kInPlace, StaticFollower(max_restarts));
}
NodeMachine Elastic(LaunchOptions::Recovery recovery) {
  return NodeMachine(DecideRecovery(recovery, /*elastic=*/true, 2),
                     recovery == LaunchOptions::Recovery::kInPlace, ElasticFollower());
}
constexpr auto kAuto = LaunchOptions::Recovery::kAuto;
constexpr auto kRestart = LaunchOptions::Recovery::kRestart;
constexpr auto kInPlace = LaunchOptions::Recovery::kInPlace;

TEST_CASE("the --recovery rule is decided in one place", "[node-machine]") {
  CHECK(DecideRecovery(kRestart, true, 1) == RecoveryPath::kRestartAsked);
  CHECK(DecideRecovery(kRestart, false, 1) == RecoveryPath::kRestartAsked);
  CHECK(DecideRecovery(kAuto, false, 2) == RecoveryPath::kRestartAcrossNodes);
  CHECK(DecideRecovery(kInPlace, false, 2) == RecoveryPath::kRestartAcrossNodes);
  CHECK(DecideRecovery(kAuto, false, 1) == RecoveryPath::kInPlace);
  CHECK(DecideRecovery(kInPlace, true, 8) == RecoveryPath::kInPlace);
  CHECK(Static(kRestart, 1, 3).recovers_in_place() == false);
  CHECK(Elastic(kAuto).recovers_in_place());
}

TEST_CASE("static: a failure restarts every worker, and the last one gives up", "[node-machine]") {
  for (auto machine : {Static(kRestart, 1, 1), Static(kAuto, /*nodes=*/2, 1)}) {
    Play(machine, {
                      {"the node is ready", Start(), {"launch attempt=0"}},
                      {"a worker fails",
                       Ended(GroupState::kFailed, 3),
                       {"failure report restart=0 of 1", "launch attempt=1"}},
                      {"it fails again",
                       Ended(GroupState::kFailed, 7),
                       {"failure report restart=1 of 1", "finish 7"}},
                  });
    CHECK(machine.attempt() == 1);
  }
}

TEST_CASE("static: a failure the workers cannot recover in place restarts them, and says why",
          "[node-machine]") {
  auto machine = Static(kAuto, 1, 2);
  Play(machine, {
                    {"the node is ready", Start(), {"launch attempt=0 in place pause=0"}},
                    {"a worker fails; none announced in-place recovery",
                     Ended(GroupState::kFailed, 1),
                     {"failure report restart=0 of 2", "explain not in place",
                      "launch attempt=1 in place pause=1"}},
                });
  auto asked = Static(kInPlace, 1, 2);
  Play(asked, {
                  {"the node is ready", Start(), {"launch attempt=0 in place pause=0"}},
                  {"--recovery in-place asked for it: a warning",
                   Ended(GroupState::kFailed, 1),
                   {"failure report restart=0 of 2", "explain not in place (warning)",
                    "launch attempt=1 in place pause=1"}},
              });
}

TEST_CASE("static: a recovery in place that succeeds", "[node-machine]") {
  auto machine = Static(kAuto, 1, 2);
  Play(machine,
       {
           {"the node is ready", Start(), {"launch attempt=0 in place pause=0"}},
           {"a worker fails; the group pauses the others",
            Group(kPausingAfterFailure),
            {"announce pause attempt=0", "failure report restart=0 of 2 in place",
             "start replacements attempt=1", "read group again"}},
           {"the group read again", Group(kPausingAfterFailure), {}},
           {"every survivor paused", Group(kPausedAfterFailure), {"rejoin attempt=1"}},
           {"they are told to rejoin", Rejoined(), {}},
           {"they join", Group(View(GroupState::kRecovering, true, false, /*joining=*/true)), {}},
           {"every survivor joined",
            Group(kRunning),
            {"arm in place pause=1", "announce recovered attempt=1"}},
       });
  CHECK(machine.attempt() == 1);
}

TEST_CASE("static: a recovery in place that falls back restarts every worker", "[node-machine]") {
  auto machine = Static(kAuto, 1, 2);
  Play(machine, {
                    {"the node is ready", Start(), {"launch attempt=0 in place pause=0"}},
                    {"a worker fails",
                     Group(kPausingAfterFailure),
                     {"announce pause attempt=0", "failure report restart=0 of 2 in place",
                      "start replacements attempt=1", "read group again"}},
                    {"a survivor never pauses: the group stops them all",
                     Group(kFellBack),
                     {"announce fell back attempt=0"}},
                    {"they are gone",
                     Ended(GroupState::kFailed, 137),
                     {"failure report restart=0 of 2", "explain not in place",
                      "launch attempt=1 in place pause=1"}},
                });
}

TEST_CASE("static: with no restart left a recovery in place is abandoned and the job ends",
          "[node-machine]") {
  auto machine = Static(kAuto, 1, 0);
  Play(machine,
       {
           {"the node is ready", Start(), {"launch attempt=0 in place pause=0 (not allowed)"}},
           {"the group pauses the others regardless",
            Group(kPausingAfterFailure),
            {"announce pause attempt=0", "abandon recovery", "read group again"}},
           {"the group stops every worker",
            Group(kStoppedFromOutside),
            {"announce abandoned attempt=0"}},
           {"they are gone",
            Ended(GroupState::kFailed, 137),
            {"failure report restart=0 of 0", "explain not in place", "finish 137"}},
       });
}

TEST_CASE("static: a hang probe pauses every worker, then kills the hung one: in place",
          "[node-machine]") {
  auto machine = Static(kAuto, 1, 2);
  Play(machine, {
                    {"the node is ready", Start(), {"launch attempt=0 in place pause=0"}},
                    {"no progress: the probe pauses every worker",
                     Group(kPausing),
                     {"announce pause attempt=0"}},
                    {"the worker that did not answer is killed",
                     Group(kPausingAfterFailure),
                     {"failure report restart=0 of 2 in place", "start replacements attempt=1",
                      "read group again"}},
                    {"every survivor paused", Group(kPausedAfterFailure), {"rejoin attempt=1"}},
                    {"they are told to rejoin", Rejoined(), {}},
                    {"every survivor joined",
                     Group(kRunning),
                     {"arm in place pause=1", "announce recovered attempt=1"}},
                });
}

TEST_CASE("static: a start that fails with workers stopping settles before it finishes",
          "[node-machine]") {
  auto machine = Static(kRestart, 1, 3);
  Play(machine,
       {
           {"the node is ready", Start(), {"launch attempt=0"}},
           {"a worker cannot start", StartFailed(/*workers_stopping=*/true), {"group changed"}},
           {"the others are gone", Ended(GroupState::kFailed), {"finish 127"}},
       });
}

TEST_CASE("a signal stops the workers, and muster exits 128+signal", "[node-machine]") {
  auto static_machine = Static(kAuto, 1, 3);
  Play(static_machine, {
                           {"the node is ready", Start(), {"launch attempt=0 in place pause=0"}},
                           {"SIGTERM", Signal(SIGTERM), {"stop 15"}},
                           {"they are gone", Ended(GroupState::kInterrupted), {"finish 143"}},
                       });
  auto elastic_machine = Elastic(kAuto);
  Play(elastic_machine,
       {
           {"generation 1", Assign(1, 0, false), {"launch gen=1 in place pause=1"}},
           {"SIGINT", Signal(SIGINT), {"leave", "stop 2"}},
           {"they are gone", Ended(GroupState::kInterrupted), {"finish 130"}},
       });
}

TEST_CASE("elastic: a membership change stops the workers and starts the next generation",
          "[node-machine]") {
  for (const auto recovery : {kRestart, kAuto}) {
    auto machine = Elastic(recovery);
    const std::string armed = recovery == kRestart ? "" : " in place pause=";
    Play(machine,
         {
             {"generation 1",
              Assign(1, 0, false),
              {"launch gen=1" + (armed.empty() ? "" : armed + "1")}},
             {"a node joins: the generation ends", Waiting(false), {"seal store", "stop 15"}},
             {"the workers are gone", Ended(GroupState::kInterrupted), {"clear current"}},
             {"generation 2",
              Assign(2, 0, false),
              {"launch gen=2" + (armed.empty() ? "" : armed + "2")}},
             {"every worker succeeds", Ended(GroupState::kSucceeded), {"report succeeded gen=2"}},
         });
    CHECK(machine.attempt() == 1);
  }
}

TEST_CASE("elastic: a second fault while the survivors join pauses them again: one recovery",
          "[node-machine]") {
  auto machine = Elastic(kAuto);
  Play(machine, {
                    {"generation 1", Assign(1, 0, true), {"launch gen=1 in place pause=1"}},
                    {"a local worker fails",
                     Group(kPausingAfterFailure),
                     {"announce pause attempt=0", "failure report restart=0 of 3 in place",
                      "read group again"}},
                    {"the group read again", Group(kPausingAfterFailure), {}},
                    {"every survivor paused",
                     Group(kPausedAfterFailure),
                     {"report failure gen=1 code=137", "clear current"}},
                    {"generation 2", Assign(2, 1, true), {"rejoin gen=2"}},
                    {"they are told to rejoin", Rejoined(), {}},
                    {"a node dies while they join", Waiting(true), {"seal store", "pause"}},
                    {"the join is cut short",
                     Group(kPausingAfterFailure),
                     {"announce pause attempt=1 during join"}},
                    {"every worker paused again", Group(kPausedAfterFailure), {"clear current"}},
                    {"generation 3", Assign(3, 1, true), {"rejoin gen=3"}},
                    {"they are told to rejoin", Rejoined(), {}},
                    {"every worker joined",
                     Group(kRunning),
                     {"arm in place pause=3", "announce recovered attempt=2"}},
                });
}

TEST_CASE("elastic: a worker that dies while paused between generations starts again",
          "[node-machine]") {
  auto machine = Elastic(kAuto);
  Play(machine, {
                    {"generation 1", Assign(1, 0, true), {"launch gen=1 in place pause=1"}},
                    {"a node fails elsewhere", Waiting(true), {"seal store", "pause"}},
                    {"the workers pause", Group(kPausing), {"announce pause attempt=0"}},
                    {"every worker paused", Group(kPaused), {"clear current"}},
                    {"one dies while paused",
                     Group(View(GroupState::kRecovering, /*failure=*/true)),
                     {"failure report restart=0 of 3 in place", "read group again"}},
                    {"the others stay paused", Group(kPausedAfterFailure), {}},
                    {"generation 2", Assign(2, 1, true), {"rejoin gen=2"}},
                    {"they are told to rejoin", Rejoined(), {}},
                    {"every worker joined",
                     Group(kRunning),
                     {"arm in place pause=2", "announce recovered attempt=1"}},
                });
}

TEST_CASE("an event of the other mode is nothing", "[node-machine]") {
  auto static_machine = Static(kAuto, 1, 3);
  CHECK(static_machine.OnAssignment(rdzv::Assignment{}, true).empty());
  CHECK(static_machine.OnFence().empty());
  auto elastic_machine = Elastic(kAuto);
  CHECK(elastic_machine.OnStart().empty());
}

}  // namespace
}  // namespace muster
