// The Agent carries out NodeMachine's actions: one handler per action type,
// checked when it compiles (common/exhaustive_visit.h), so an action the
// machine returns is never dropped in silence. In the order given: the daemon
// reads meaning into it (an outcome is reported before the client says no
// workers run). A start that fails feeds the machine again and carries out
// its answer at once; the followers never put an action after a start.
#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "common/exhaustive_visit.h"
#include "launcher/agent/agent.h"

namespace muster {

void Agent::Carry(const NodeActions& actions) {
  for (const NodeAction& action : actions) {
    VisitEvery(
        action,
        // Static runs.
        [&](const LaunchAttempt& start) {
          if (start.attempt > 0) {
            spdlog::info("restarting workers: attempt={} of max_restarts={}", start.attempt,
                         options_.max_restarts);
          }
          if (auto s = StartAttempt(start.attempt, start.in_place); !s.ok()) {
            spdlog::error("{}", s.message());
            Carry(machine_.OnStartFailed(s.message(), group_ && !group_->finished()));
            return;
          }
          // Only the hang deadline to arm: nothing has happened to the new
          // workers yet.
          ArmTimer();
        },
        [&](const StartReplacements& early) { StartReplacementsEarly(early.attempt); },
        [&](const RejoinAttempt& rejoin) { RejoinAttemptInPlace(rejoin.attempt); },
        [&](const AttemptSucceeded& succeeded) {
          spdlog::info("attempt={} all {} workers succeeded", succeeded.attempt,
                       node_.local_world_size);
        },
        // Elastic runs.
        [&](const LaunchGeneration& start) { StartGeneration(start); },
        [&](const PauseWorkers&) {
          // The machine asked because CanPauseAll() held when it decided.
          group_->PauseAll(Clock::now());
          AfterGroupEvent();
        },
        [&](const RejoinWorkers& rejoin) { RejoinGeneration(rejoin.assignment); },
        [&](const ReportSucceeded& succeeded) {
          if (!succeeded.repeated)
            spdlog::info("event=workers_succeeded gen={}", succeeded.generation);
          client_->ReportSucceeded(succeeded.generation);
        },
        [&](const ReportFailure& failed) {
          client_->ReportWorkerFailure(failed.generation, failed.exit_code, failed.message);
        },
        [&](const ClearCurrent&) { client_->SetCurrent(std::nullopt); },
        [&](const SealStore&) { store_->Seal(); },
        [&](const LeaveRendezvous&) { client_->Leave(); },
        // Both.
        [&](const StopWorkers& stop) { StopGroup(stop.signal); },
        [&](const ReportFailureLocally& report) { PrintFailureReport(report); },
        [&](const ArmInPlace& arm) { ArmInPlaceRecovery(arm); },
        [&](const AbandonRecovery& abandon) {
          group_->AbandonRecovery(abandon.reason, Clock::now());
        },
        [&](const muster::Finish& finish) { Finish(finish.exit_code); },
        [&](const AnnouncePause& pause) { AnnouncePauseBegan(pause); },
        [&](const AnnounceRecoveryEnded& end) { AnnounceEnd(end); },
        [&](const ExplainNotInPlace& explain) { LogWhyNotInPlace(explain); },
        [&](const ReadGroupAgain&) { AdvanceRecovery(); },
        [&](const GroupChanged&) { AfterGroupEvent(); });
  }
}

}  // namespace muster
