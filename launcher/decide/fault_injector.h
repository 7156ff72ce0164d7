// FaultInjector: decides when this agent carries out the faults of its plan
// (common/fault_spec.h) that are the agent's: kill-worker, hang-worker,
// kill-agent, drop-heartbeats, delay-heartbeats, and crash-daemon when the
// daemon runs inside this agent. Worker faults (exit-worker,
// corrupt-checkpoint) fire inside the workers; the injector only remembers
// which did (MarkFired), so that restarted workers do not fire them again.
//
// Each spec is decided once: it fires here, or it is found to be another
// node's (its target is not on this node when the trigger comes), or it is
// missed (a time trigger came while no workers ran here). Decided specs never
// come back.
//
// No clock or event loop inside: the agent feeds time and progress, arms a
// timer for NextDeadline(), and executes the actions. Not thread-safe.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/fault_spec.h"

namespace muster {

// This node's place in the generation its workers run.
struct FaultPlacement {
  int group_rank = 0;
  int group_world_size = 1;
  int global_rank_offset = 0;
  int local_world_size = 1;
  int world_size = 1;
};

struct FaultAction {
  const FaultSpec* spec = nullptr;
  int global_rank = -1;  // worker faults: the target; -1 for faults of the agent itself
  std::string trigger;   // "after=5000ms" or "step=12 (rank 3)", for the log
};

// A spec that was decided without firing, and why (for the log).
struct FaultSkip {
  const FaultSpec* spec = nullptr;
  std::string why;
};

// The signal the agent sends a worker for a kill-worker action (the spec's
// own) or a hang-worker action (SIGSTOP: the worker stays, silent).
// REQUIRES: spec.kind is kKillWorker or kHangWorker.
int WorkerFaultSignal(const FaultSpec& spec);

// Why `spec` may never fire when the workers are Python scripts, which link
// no libmuster_runtime. Their steps are reported when they start warm
// (`steps_hooked`: the warm process's step hooks report an unmodified
// script's optimizer steps), else only when the script writes them to
// MUSTER_PROGRESS_FD. nullopt when nothing stands in its way.
std::optional<std::string> MayNotFireOnPython(const FaultSpec& spec, bool steps_hooked);

class FaultInjector {
 public:
  // `started`: what after= counts from. `hosts_daemon`: this agent runs the
  // rendezvous daemon, so crash-daemon is its to carry out.
  FaultInjector(FaultPlan plan, Time started, bool hosts_daemon);

  // Time triggers that are due at `now`. `placement`: nullopt while no
  // workers run here; a `slow` spec then waits for the next call with
  // workers (the agent calls again when they start), the others are
  // decided as not fired.
  std::vector<FaultAction> OnTime(Time now, const std::optional<FaultPlacement>& placement);
  // A worker of this node, of rank `global_rank`, reported `step`.
  std::vector<FaultAction> OnStep(int global_rank, int64_t step, const FaultPlacement& placement);
  // A worker said it carried out spec `index`.
  void MarkFired(int index);

  // The next time trigger still undecided, if any.
  std::optional<Time> NextDeadline() const;
  // Indices of worker faults already fired, ','-separated (MUSTER_INJECT_FIRED).
  std::string FiredWorkerFaults() const;
  // The specs neither fired nor decided whose target is on this node as
  // `last` placed it (every one when no workers ever ran here): at the end of
  // a run, the faults this node should have carried out and did not.
  std::vector<const FaultSpec*> Unfired(const std::optional<FaultPlacement>& last) const;
  // Specs decided without firing since the last call.
  std::vector<FaultSkip> TakeSkips();
  const FaultPlan& plan() const { return plan_; }

 private:
  enum class State { kPending, kFired, kDecided };
  // Whether `spec`'s target is on this node; the target's rank for worker faults.
  std::optional<int> TargetHere(const FaultSpec& spec, const FaultPlacement& placement) const;

  FaultPlan plan_;
  Time started_;
  bool hosts_daemon_;
  std::vector<State> states_;
  std::vector<FaultSkip> skips_;
  Time last_time_{};  // the latest OnTime(): a slow spec past it waits for workers
};

}  // namespace muster
