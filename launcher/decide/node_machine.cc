#include "launcher/decide/node_machine.h"

#include <type_traits>
#include <utility>

#include "common/exhaustive_visit.h"

namespace muster {

GroupView GroupViewOf(const WorkerGroup& group) {
  GroupView view{.recovery = RecoveryViewOf(group), .first_failure = std::nullopt};
  if (const auto& failures = group.failures(); !failures.empty()) {
    view.first_failure =
        LocalFailure{failures.front().status.ShellCode(), failures.front().status.Describe()};
  }
  return view;
}

NodeMachine::NodeMachine(RecoveryPath recovery, bool in_place_asked, StaticFollower follower)
    : recovery_path_(recovery), in_place_asked_(in_place_asked), follower_(std::move(follower)) {}

NodeMachine::NodeMachine(RecoveryPath recovery, bool in_place_asked, ElasticFollower follower)
    : recovery_path_(recovery), in_place_asked_(in_place_asked), follower_(std::move(follower)) {}

int NodeMachine::attempt() const {
  if (const auto* follower = static_follower()) return follower->attempt();
  return AttemptOf(entered_generation_);
}

template <typename Action>
void NodeMachine::TakeOne(const Action& action, NodeActions& out) {
  // The group is armed only where the rule allows a recovery in place.
  const auto arm = [&](const ArmInPlace& in_place) {
    return recovers_in_place() ? std::optional<ArmInPlace>(in_place) : std::nullopt;
  };
  if constexpr (std::is_same_v<Action, StartAttemptWorkers>) {
    out.emplace_back(LaunchAttempt{.attempt = action.attempt, .in_place = arm(action.in_place)});
  } else if constexpr (std::is_same_v<Action, StartWorkers>) {
    entered_generation_ = action.assignment.generation;
    out.emplace_back(
        LaunchGeneration{.assignment = action.assignment, .in_place = arm(action.in_place)});
  } else if constexpr (std::is_same_v<Action, ArmInPlace>) {
    if (recovers_in_place()) out.emplace_back(action);
  } else if constexpr (std::is_same_v<Action, ReportFailureLocally>) {
    out.emplace_back(action);
    if (recovers_in_place() && !action.in_place) {
      out.emplace_back(ExplainNotInPlace{.asked = in_place_asked_});
    }
  } else {
    if constexpr (std::is_same_v<Action, RejoinWorkers>) {
      entered_generation_ = action.assignment.generation;
    }
    out.emplace_back(action);
  }
}

void NodeMachine::Take(const StaticActions& actions, NodeActions& out) {
  for (const StaticAction& action : actions) {
    std::visit([&](const auto& one) { TakeOne(one, out); }, action);
  }
}

void NodeMachine::Take(const FollowerActions& actions, NodeActions& out) {
  for (const FollowerAction& action : actions) {
    std::visit([&](const auto& one) { TakeOne(one, out); }, action);
  }
}

NodeActions NodeMachine::OnStart() {
  NodeActions out;
  if (auto* follower = std::get_if<StaticFollower>(&follower_)) Take(follower->OnStart(), out);
  return out;
}

NodeActions NodeMachine::OnAssignment(const rdzv::Assignment& assignment, bool workers_can_pause) {
  NodeActions out;
  if (auto* follower = std::get_if<ElasticFollower>(&follower_)) {
    follower->SetWorkersCanPause(workers_can_pause);
    Take(follower->OnAssignment(assignment), out);
  }
  return out;
}

NodeActions NodeMachine::OnWaiting(bool workers_can_pause) {
  NodeActions out;
  if (auto* follower = std::get_if<ElasticFollower>(&follower_)) {
    follower->SetWorkersCanPause(workers_can_pause);
    Take(follower->OnWaiting(), out);
  }
  return out;
}

NodeActions NodeMachine::OnFence() {
  NodeActions out;
  if (auto* follower = std::get_if<ElasticFollower>(&follower_)) Take(follower->OnFence(), out);
  return out;
}

NodeActions NodeMachine::OnRunEnded(bool succeeded) {
  NodeActions out;
  if (auto* follower = std::get_if<ElasticFollower>(&follower_)) {
    Take(follower->OnRunEnded(succeeded), out);
  }
  return out;
}

NodeActions NodeMachine::OnRendezvousFailed() {
  NodeActions out;
  if (auto* follower = std::get_if<ElasticFollower>(&follower_)) {
    Take(follower->OnRendezvousFailed(), out);
  }
  return out;
}

NodeActions NodeMachine::OnSignal(int sig) {
  NodeActions out;
  std::visit([&](auto& follower) { Take(follower.OnSignal(sig), out); }, follower_);
  return out;
}

NodeActions NodeMachine::OnStartFailed(const std::string& message, bool workers_stopping) {
  NodeActions out;
  VisitEvery(
      follower_,
      [&](StaticFollower& follower) { Take(follower.OnStartFailed(workers_stopping), out); },
      [&](ElasticFollower& follower) {
        Take(follower.OnStartFailed(message, workers_stopping), out);
      });
  // The workers that did start stop: their exits settle the attempt, and
  // the deadline that escalates to SIGKILL is armed as after a group event.
  if (workers_stopping) out.emplace_back(GroupChanged{});
  return out;
}

NodeActions NodeMachine::OnGroupEvent(const GroupView& group, Time now) {
  NodeActions out;
  for (const RecoveryStep& step : recovery_.OnGroupEvent(group.recovery, now)) {
    const bool go_on = VisitEvery(
        step,
        [&](const PauseBegan& began) {
          out.emplace_back(AnnouncePause{.attempt = attempt(), .during_join = began.during_join});
          return true;
        },
        [&](const FailureKnown&) {
          const LocalFailure failure = group.first_failure.value_or(LocalFailure{});
          std::visit([&](auto& follower) { Take(follower.OnWorkersPausing(failure), out); },
                     follower_);
          // What the agent does about the failure changes the group: the
          // steps after it come from the group's state read again.
          out.emplace_back(ReadGroupAgain{});
          return false;
        },
        [&](const SurvivorsPaused&) {
          // Static: they rejoin as the next attempt now; elastic: once the
          // next generation is assigned.
          std::visit([&](auto& follower) { Take(follower.OnWorkersPaused(), out); }, follower_);
          return true;
        },
        [&](const RecoveryEnded& ended) {
          // Recovered, the follower arms the group for the next failure
          // (static: attempt() is now the attempt the survivors joined).
          const bool recovered = ended.how == RecoveryEnded::How::kRecovered;
          std::visit([&](auto& follower) { Take(follower.OnRecoveryEnded(recovered), out); },
                     follower_);
          out.emplace_back(AnnounceRecoveryEnded{.attempt = attempt(), .ended = ended});
          return true;
        });
    if (!go_on) break;
  }
  return out;
}

void NodeMachine::OnWorkersGone() {
  std::visit([](auto& follower) { follower.OnWorkersGone(); }, follower_);
}

NodeActions NodeMachine::OnWorkersSettled(const WorkersOutcome& outcome) {
  NodeActions out;
  std::visit([&](auto& follower) { Take(follower.OnWorkersSettled(outcome), out); }, follower_);
  return out;
}

}  // namespace muster
