// The Agent's side of fault injection (--inject): FaultRehearsal
// (fault_rehearsal.h) carries the plan out; the agent gives it where its
// workers run and the means to reach them and the rendezvous client.
#include "launcher/agent/agent.h"

namespace muster {

void Agent::StartFaultInjection() {
  if (!options_.fault_plan) return;
  FaultRehearsal::Hooks hooks;
  hooks.placement = [this] { return CurrentPlacement(); };
  hooks.signal_worker = [this](int rank, int sig) {
    return group_ && group_->SignalWorker(rank - node_.global_rank_offset, sig);
  };
  if (elastic_) {
    hooks.suspend_traffic = [this](std::chrono::milliseconds duration) {
      if (client_) client_->SuspendTraffic(duration);
    };
    hooks.delay_heartbeats = [this](std::chrono::milliseconds duration,
                                    std::chrono::milliseconds window) {
      if (client_) client_->DelayHeartbeats(duration, window);
    };
  }
  const auto steps = options_.no_python    ? FaultRehearsal::WorkerSteps::kNotPython
                     : WarmWorkersWanted() ? FaultRehearsal::WorkerSteps::kPythonHooked
                                           : FaultRehearsal::WorkerSteps::kPythonCold;
  faults_ = std::make_unique<FaultRehearsal>(
      io_, *options_.fault_plan, elastic_ && elastic_->is_host, steps, std::move(hooks));
}

void Agent::ReportUnfiredFaults() const {
  if (!faults_) return;
  // Where this node's workers ran last.
  std::optional<FaultPlacement> last;
  if (node_.local_world_size > 0 && node_.world_size > 0) last = PlacementOf(node_);
  faults_->ReportUnfired(last);
}

std::optional<FaultPlacement> Agent::CurrentPlacement() const {
  if (!group_ || group_->finished() || settling_) return std::nullopt;
  return PlacementOf(node_);
}

}  // namespace muster
