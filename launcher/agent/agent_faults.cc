// The Agent's side of fault injection (--inject): it arms a timer for the
// plan's time triggers, watches workers' step reports for step triggers, and
// carries out what the FaultInjector decides. Every fault is logged as
// "event=inject" before it is carried out, so the log shows it even when the
// fault kills this agent.
#include <spdlog/spdlog.h>

#include <csignal>

#include "common/clock.h"
#include "launcher/agent/agent.h"

namespace muster {
namespace {

FaultPlacement PlacementOf(const rdzv::Assignment& node) {
  FaultPlacement placement;
  placement.group_rank = node.group_rank;
  placement.group_world_size = node.group_world_size;
  placement.global_rank_offset = node.global_rank_offset;
  placement.local_world_size = node.local_world_size;
  placement.world_size = node.world_size;
  return placement;
}

}  // namespace

void Agent::StartFaultInjection() {
  if (!options_.fault_plan) return;
  const bool hosts_daemon = elastic_ && elastic_->is_host;
  injector_ = std::make_unique<FaultInjector>(*options_.fault_plan, Clock::now(), hosts_daemon);
  const FaultPlan& plan = injector_->plan();
  spdlog::info("event=inject_plan seed={} faults={}", plan.seed, plan.faults.size());
  for (const FaultSpec& spec : plan.faults) {
    spdlog::info("event=inject_spec index={} fault=\"{}\"{}{}", spec.index, spec.text,
                 spec.after ? " after_ms=" + std::to_string(spec.after->count()) : "",
                 spec.step ? " step=" + std::to_string(*spec.step) : "");
    // A rehearsal that silently does not happen proves nothing: say so now.
    if (options_.no_python) continue;
    if (auto why = MayNotFireOnPython(spec)) {
      spdlog::warn("--inject '{}' may never fire: {}", spec.text, *why);
    }
  }
  ArmFaultTimer();
}

void Agent::ReportUnfiredFaults() const {
  if (!injector_) return;
  // Where this node's workers ran last: a fault aimed at another node's is
  // that node's to report.
  std::optional<FaultPlacement> last;
  if (node_.local_world_size > 0 && node_.world_size > 0) last = PlacementOf(node_);
  for (const FaultSpec* spec : injector_->Unfired(last)) {
    const bool worker_carried = FaultActorOf(spec->kind) == FaultActor::kWorker;
    spdlog::warn("--inject '{}' never fired on this node{}", spec->text,
                 worker_carried ? ": no worker said it carried it out"
                 : spec->step   ? ": no worker reported step " + std::to_string(*spec->step)
                                : "");
  }
}

void Agent::ArmFaultTimer() {
  const auto deadline = injector_->NextDeadline();
  if (!deadline) return;
  fault_timer_.expires_at(*deadline);
  fault_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || finished_) return;
    CarryOut(injector_->OnTime(Clock::now(), CurrentPlacement()));
    ArmFaultTimer();
  });
}

std::optional<FaultPlacement> Agent::CurrentPlacement() const {
  if (!group_ || group_->finished() || settling_) return std::nullopt;
  return PlacementOf(node_);
}

void Agent::OnFaultProgress(int local_rank, const ProgressReport& report) {
  for (int index : report.injected) {
    injector_->MarkFired(index);
    const auto& faults = injector_->plan().faults;
    const bool known = index >= 0 && static_cast<size_t>(index) < faults.size();
    spdlog::warn("event=inject index={} fault=\"{}\" target=rank{} by=worker", index,
                 known ? faults[index].text : "?", node_.global_rank_offset + local_rank);
  }
  const auto placement = CurrentPlacement();
  if (report.step >= 0 && placement) {
    CarryOut(injector_->OnStep(node_.global_rank_offset + local_rank, report.step, *placement));
  }
}

void Agent::CarryOut(const std::vector<FaultAction>& actions) {
  for (const FaultSkip& skip : injector_->TakeSkips()) {
    spdlog::info("event=inject_skipped index={} fault=\"{}\" why=\"{}\"", skip.spec->index,
                 skip.spec->text, skip.why);
  }
  for (const FaultAction& action : actions) {
    const FaultSpec& spec = *action.spec;
    const std::string target =
        action.global_rank >= 0 ? "rank" + std::to_string(action.global_rank) : "agent";
    spdlog::warn("event=inject index={} fault=\"{}\" target={} trigger=\"{}\" seed={}", spec.index,
                 spec.text, target, action.trigger, injector_->plan().seed);
    switch (spec.kind) {
      case FaultKind::kKillWorker:
      case FaultKind::kHangWorker: {
        const int local_rank = action.global_rank - node_.global_rank_offset;
        if (!group_ || !group_->SignalWorker(local_rank, WorkerFaultSignal(spec))) {
          spdlog::info("event=inject_skipped index={} why=\"rank {} is not running\"", spec.index,
                       action.global_rank);
        }
        break;
      }
      case FaultKind::kKillAgent:
      case FaultKind::kCrashDaemon:
        // The daemon of an is_host agent lives in this process: crashing it
        // is crashing the agent. Workers follow by PR_SET_PDEATHSIG.
        spdlog::default_logger()->flush();
        ::raise(spec.kind == FaultKind::kCrashDaemon ? SIGKILL : spec.signal);
        break;
      case FaultKind::kDropHeartbeats:
      case FaultKind::kDelayHeartbeats:
        if (!client_) {
          spdlog::info(
              "event=inject_skipped index={} why=\"no rendezvous daemon (static "
              "rendezvous)\"",
              spec.index);
          break;
        }
        if (spec.kind == FaultKind::kDropHeartbeats) {
          client_->SuspendTraffic(spec.duration);
        } else {
          client_->DelayHeartbeats(spec.duration, spec.window);
        }
        break;
      default:
        break;
    }
  }
}

void Agent::AddFaultVariables(std::map<std::string, std::string>& variables) const {
  if (!injector_) return;
  variables[kInjectEnv] = injector_->plan().text;
  variables[kInjectSeedEnv] = std::to_string(injector_->plan().seed);
  variables[kInjectFiredEnv] = injector_->FiredWorkerFaults();
}

}  // namespace muster
