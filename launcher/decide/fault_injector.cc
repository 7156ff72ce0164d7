#include "launcher/decide/fault_injector.h"

#include <algorithm>
#include <csignal>

namespace muster {

int WorkerFaultSignal(const FaultSpec& spec) {
  return spec.kind == FaultKind::kHangWorker ? SIGSTOP : spec.signal;
}

FaultInjector::FaultInjector(FaultPlan plan, Time started, bool hosts_daemon)
    : plan_(std::move(plan)),
      started_(started),
      hosts_daemon_(hosts_daemon),
      states_(plan_.faults.size(), State::kPending) {
  for (size_t i = 0; i < plan_.faults.size(); ++i) {
    const FaultSpec& spec = plan_.faults[i];
    // Faults that are not the agent's wait only for a worker's word
    // (MarkFired); a daemon crash is not this agent's without the daemon.
    if (spec.kind == FaultKind::kCrashDaemon && !hosts_daemon_) states_[i] = State::kDecided;
  }
}

std::optional<int> FaultInjector::TargetHere(const FaultSpec& spec,
                                             const FaultPlacement& placement) const {
  switch (spec.kind) {
    case FaultKind::kKillWorker:
    case FaultKind::kHangWorker:
    case FaultKind::kSlowWorker: {
      const int rank = spec.RankAmong(placement.world_size);
      const bool here = rank >= placement.global_rank_offset &&
                        rank < placement.global_rank_offset + placement.local_world_size;
      return here ? std::optional(rank) : std::nullopt;
    }
    case FaultKind::kKillAgent:
    case FaultKind::kDropHeartbeats:
    case FaultKind::kDelayHeartbeats: {
      const bool any_node = !spec.node && !spec.any_node;
      if (any_node || spec.NodeAmong(placement.group_world_size) == placement.group_rank) {
        return -1;
      }
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

std::vector<FaultAction> FaultInjector::OnTime(Time now,
                                               const std::optional<FaultPlacement>& placement) {
  last_time_ = std::max(last_time_, now);
  std::vector<FaultAction> actions;
  for (size_t i = 0; i < plan_.faults.size(); ++i) {
    const FaultSpec& spec = plan_.faults[i];
    if (states_[i] != State::kPending || !spec.after ||
        FaultActorOf(spec.kind) == FaultActor::kWorker || now < started_ + *spec.after) {
      continue;
    }
    const std::string trigger = "after=" + std::to_string(spec.after->count()) + "ms";
    // The daemon's crash, and an agent fault aimed at every node, need no
    // workers; a target chosen among ranks or nodes does.
    const bool untargeted = spec.kind == FaultKind::kCrashDaemon ||
                            (FaultActorOf(spec.kind) == FaultActor::kAgent && !spec.rank &&
                             !spec.any_rank && !spec.node && !spec.any_node);
    if (untargeted) {
      states_[i] = State::kFired;
      actions.push_back({&spec, -1, trigger});
      continue;
    }
    if (!placement) {
      // A slow rank waits for the workers (WorkersStarted() tries again).
      if (spec.kind == FaultKind::kSlowWorker) continue;
      states_[i] = State::kDecided;
      skips_.push_back({&spec, "no workers ran on this node at " + trigger});
      continue;
    }
    const auto target = TargetHere(spec, *placement);
    if (!target) {
      states_[i] = State::kDecided;
      skips_.push_back({&spec, "the target is on another node"});
      continue;
    }
    states_[i] = State::kFired;
    actions.push_back({&spec, *target, trigger});
  }
  return actions;
}

std::vector<FaultAction> FaultInjector::OnStep(int global_rank, int64_t step,
                                               const FaultPlacement& placement) {
  std::vector<FaultAction> actions;
  for (size_t i = 0; i < plan_.faults.size(); ++i) {
    const FaultSpec& spec = plan_.faults[i];
    if (states_[i] != State::kPending || !spec.step ||
        FaultActorOf(spec.kind) != FaultActor::kAgent || step < 0 ||
        static_cast<uint64_t>(step) < *spec.step) {
      continue;
    }
    const auto target = TargetHere(spec, placement);
    if (!target) {
      // Ranks move between generations; a rank not here now may come here
      // later, so only an agent fault aimed at another node is decided.
      if (spec.kind != FaultKind::kKillWorker && spec.kind != FaultKind::kHangWorker &&
          spec.kind != FaultKind::kSlowWorker) {
        states_[i] = State::kDecided;
        skips_.push_back({&spec, "the target is another node"});
      }
      continue;
    }
    if (*target >= 0 && *target != global_rank) continue;  // its own rank's report fires it
    states_[i] = State::kFired;
    actions.push_back(
        {&spec, *target,
         "step=" + std::to_string(step) + " (rank " + std::to_string(global_rank) + ")"});
  }
  return actions;
}

void FaultInjector::MarkFired(int index) {
  if (index >= 0 && static_cast<size_t>(index) < states_.size()) states_[index] = State::kFired;
}

std::optional<Time> FaultInjector::NextDeadline() const {
  std::optional<Time> next;
  for (size_t i = 0; i < plan_.faults.size(); ++i) {
    const FaultSpec& spec = plan_.faults[i];
    if (states_[i] != State::kPending || !spec.after ||
        FaultActorOf(spec.kind) == FaultActor::kWorker) {
      continue;
    }
    const auto when = started_ + *spec.after;
    // A slow rank past its time waits for the workers, not for the clock.
    if (spec.kind == FaultKind::kSlowWorker && when <= last_time_) continue;
    if (!next || when < *next) next = when;
  }
  return next;
}

std::string FaultInjector::FiredWorkerFaults() const {
  std::string list;
  for (size_t i = 0; i < plan_.faults.size(); ++i) {
    if (states_[i] == State::kFired && FaultActorOf(plan_.faults[i].kind) == FaultActor::kWorker) {
      if (!list.empty()) list += ',';
      list += std::to_string(i);
    }
  }
  return list;
}

std::vector<FaultSkip> FaultInjector::TakeSkips() { return std::exchange(skips_, {}); }

std::vector<const FaultSpec*> FaultInjector::Unfired(
    const std::optional<FaultPlacement>& last) const {
  std::vector<const FaultSpec*> unfired;
  for (size_t i = 0; i < plan_.faults.size(); ++i) {
    if (states_[i] != State::kPending) continue;
    const FaultSpec& spec = plan_.faults[i];
    bool here = !last || TargetHere(spec, *last).has_value();
    if (last && FaultActorOf(spec.kind) == FaultActor::kWorker) {
      // Carried out by the target rank's worker (rank 0's without rank=).
      const int rank = spec.rank || spec.any_rank ? spec.RankAmong(last->world_size) : 0;
      here = rank >= last->global_rank_offset &&
             rank < last->global_rank_offset + last->local_world_size;
    }
    if (here) unfired.push_back(&spec);
  }
  return unfired;
}

std::optional<std::string> MayNotFireOnPython(const FaultSpec& spec, bool steps_hooked) {
  if (FaultActorOf(spec.kind) == FaultActor::kWorker) {
    return std::string(FaultKindName(spec.kind)) +
           " is carried out by libmuster_runtime inside the worker (muster-train); a Python "
           "script does not";
  }
  if (spec.step && !steps_hooked) {
    return "step=" + std::to_string(*spec.step) +
           " counts the steps workers report; cold-started Python workers report none unless "
           "the script writes them to MUSTER_PROGRESS_FD (docs/fault-injection.md)";
  }
  return std::nullopt;
}

}  // namespace muster
