#include "launcher/agent/fault_rehearsal.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>
#include <utility>

#include "common/clock.h"

namespace muster {

FaultPlacement PlacementOf(const rdzv::Assignment& node) {
  FaultPlacement placement;
  placement.group_rank = node.group_rank;
  placement.group_world_size = node.group_world_size;
  placement.global_rank_offset = node.global_rank_offset;
  placement.local_world_size = node.local_world_size;
  placement.world_size = node.world_size;
  return placement;
}

FaultRehearsal::FaultRehearsal(boost::asio::io_context& io, const FaultPlan& plan,
                               bool hosts_daemon, WorkerSteps steps, Hooks hooks)
    : injector_(plan, Clock::now(), hosts_daemon),
      hooks_(std::move(hooks)),
      timer_(io),
      slow_timer_(io) {
  const FaultPlan& planned = injector_.plan();
  spdlog::info("event=inject_plan seed={} faults={}", planned.seed, planned.faults.size());
  for (const FaultSpec& spec : planned.faults) {
    spdlog::info("event=inject_spec index={} fault=\"{}\"{}{}", spec.index, spec.text,
                 spec.after ? " after_ms=" + std::to_string(spec.after->count()) : "",
                 spec.step ? " step=" + std::to_string(*spec.step) : "");
    // A rehearsal that silently does not happen proves nothing: say so now.
    if (steps == WorkerSteps::kNotPython) continue;
    if (auto why = MayNotFireOnPython(spec, steps == WorkerSteps::kPythonHooked)) {
      spdlog::warn("--inject '{}' may never fire: {}", spec.text, *why);
    }
  }
  ArmTimer();
}

void FaultRehearsal::ReportUnfired(const std::optional<FaultPlacement>& last) const {
  // A fault aimed at another node's workers is that node's to report.
  for (const FaultSpec* spec : injector_.Unfired(last)) {
    const bool worker_carried = FaultActorOf(spec->kind) == FaultActor::kWorker;
    spdlog::warn("--inject '{}' never fired on this node{}", spec->text,
                 worker_carried ? ": no worker said it carried it out"
                 : spec->step   ? ": no worker reported step " + std::to_string(*spec->step)
                                : "");
  }
}

void FaultRehearsal::ArmTimer() {
  const auto deadline = injector_.NextDeadline();
  if (!deadline) return;
  timer_.expires_at(*deadline);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    CarryOut(injector_.OnTime(Clock::now(), hooks_.placement()));
    ArmTimer();
  });
}

void FaultRehearsal::OnProgress(int rank, const ProgressReport& report) {
  for (int index : report.injected) {
    injector_.MarkFired(index);
    const auto& faults = injector_.plan().faults;
    const bool known = index >= 0 && static_cast<size_t>(index) < faults.size();
    spdlog::warn("event=inject index={} fault=\"{}\" target=rank{} by=worker", index,
                 known ? faults[index].text : "?", rank);
  }
  const auto placement = hooks_.placement();
  if (report.step >= 0 && placement) CarryOut(injector_.OnStep(rank, report.step, *placement));
}

void FaultRehearsal::CarryOut(const std::vector<FaultAction>& actions) {
  for (const FaultSkip& skip : injector_.TakeSkips()) {
    spdlog::info("event=inject_skipped index={} fault=\"{}\" why=\"{}\"", skip.spec->index,
                 skip.spec->text, skip.why);
  }
  for (const FaultAction& action : actions) {
    const FaultSpec& spec = *action.spec;
    const std::string target =
        action.global_rank >= 0 ? "rank" + std::to_string(action.global_rank) : "agent";
    spdlog::warn("event=inject index={} fault=\"{}\" target={} trigger=\"{}\" seed={}", spec.index,
                 spec.text, target, action.trigger, injector_.plan().seed);
    switch (spec.kind) {
      case FaultKind::kKillWorker:
      case FaultKind::kHangWorker:
        if (!hooks_.signal_worker(action.global_rank, WorkerFaultSignal(spec))) {
          spdlog::info("event=inject_skipped index={} why=\"rank {} is not running\"", spec.index,
                       action.global_rank);
        }
        break;
      case FaultKind::kSlowWorker:
        if (slow_) {
          spdlog::info("event=inject_skipped index={} why=\"rank {} is slowed already\"",
                       spec.index, slow_->rank);
          break;
        }
        slow_ = SlowRank{action.global_rank, spec.factor, false};
        DutyCycle();
        break;
      case FaultKind::kKillAgent:
      case FaultKind::kCrashDaemon:
        // The daemon of an is_host agent lives in this process: crashing it
        // is crashing the agent. Workers follow by PR_SET_PDEATHSIG.
        spdlog::default_logger()->flush();
        ::raise(spec.kind == FaultKind::kCrashDaemon ? SIGKILL : spec.signal);
        break;
      case FaultKind::kDropHeartbeats:
      case FaultKind::kDelayHeartbeats:
        if (!hooks_.suspend_traffic) {
          spdlog::info(
              "event=inject_skipped index={} why=\"no rendezvous daemon (static "
              "rendezvous)\"",
              spec.index);
          break;
        }
        if (spec.kind == FaultKind::kDropHeartbeats) {
          hooks_.suspend_traffic(spec.duration);
        } else {
          hooks_.delay_heartbeats(spec.duration, spec.window);
        }
        break;
      default:
        break;
    }
  }
}

void FaultRehearsal::AddVariables(std::map<std::string, std::string>& variables) const {
  variables[kInjectEnv] = injector_.plan().text;
  variables[kInjectSeedEnv] = std::to_string(injector_.plan().seed);
  variables[kInjectFiredEnv] = injector_.FiredWorkerFaults();
}

void FaultRehearsal::OnWorkersStarted() {
  if (stopped_) return;
  CarryOut(injector_.OnTime(Clock::now(), hooks_.placement()));
  ArmTimer();
}

void FaultRehearsal::DutyCycle() {
  if (!slow_ || stopped_) return;
  slow_->stopped = !slow_->stopped;
  // A rank not running now (between attempts) is signalled again next cycle.
  hooks_.signal_worker(slow_->rank, slow_->stopped ? SIGSTOP : SIGCONT);
  const double running = 1.0 / slow_->factor;
  const auto phase = std::chrono::duration_cast<std::chrono::milliseconds>(
      kSlowPeriod * (slow_->stopped ? 1.0 - running : running));
  slow_timer_.expires_after(std::max(phase, std::chrono::milliseconds(1)));
  slow_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) DutyCycle();
  });
}

void FaultRehearsal::Stop() {
  stopped_ = true;
  timer_.cancel();
  slow_timer_.cancel();
  // A slowed rank is not left stopped.
  if (slow_ && slow_->stopped) hooks_.signal_worker(slow_->rank, SIGCONT);
  slow_.reset();
}

}  // namespace muster
