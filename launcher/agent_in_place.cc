// The Agent's in-place recovery (--recovery in-place): the worker group
// decides who pauses and when the survivors may rejoin (worker_group.h);
// this file reads the workers' control lines, renews the store between the
// two generations, tells the survivors where they now stand, starts the
// failed ranks again and logs how the recovery went.
//
// InPlaceRecovery says how a recovery goes (began, failure known, survivors
// paused, ended); the mode's follower decides what the node does about it.
// Static runs: StaticFollower; the next attempt keeps the ranks. Its failed
// ranks start as soon as the pause begins; the survivors rejoin once paused.
// Elastic runs: ElasticFollower. A local failure pauses the local
// survivors, then is reported to the daemon (which counts a restart and
// forms the next generation); a generation that ends for another reason
// (a failure or death elsewhere, a newcomer) pauses every worker; the next
// assignment rejoins them, with the ranks and world size it gives. A
// generation that ends while they join it pauses them again, and the one
// after rejoins them: one recovery, joined twice, with no restart.
//
// Restarts: an in-place recovery counts as one restart against
// --max-restarts, as a restart of every worker would (the failure is the
// same; only its cost differs). Whether a failure may be recovered in place
// is the follower's decision (ArmInPlace, with every start and recovery;
// AbandonRecovery should the group pause regardless): with no restart left
// the job stops as before. A static recovery that falls back leaves the attempt as it was:
// the restart that follows takes the number the recovery began (its early
// replacements are gone by then, so no spawn tag is met twice).
#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "launcher/agent.h"
#include "store/store_server.h"

namespace muster {
namespace {

// Control messages start with a verb; progress lines with a digit, fault
// reports with "inject" (progress_report.h).
bool IsControlLine(std::string_view line) {
  return !line.empty() && line[0] >= 'a' && line[0] <= 'z' && !line.starts_with("inject");
}

}  // namespace

bool Agent::RecoversInPlace() const {
  // Static runs across nodes restart each node on its own (as torchrun's
  // static backend): nothing would pause the other nodes' workers.
  return options_.recovers_in_place(elastic_.has_value(), node_.group_world_size);
}

void Agent::LogWhyNotInPlace() const {
  if (!RecoversInPlace() || !group_) return;
  const std::vector<int> ranks = group_->local_ranks_not_in_place();
  if (ranks.empty()) return;  // a fallback, logged as event=in_place_fallback
  const bool asked = options_.recovery == LaunchOptions::Recovery::kInPlace;
  spdlog::log(asked ? spdlog::level::warn : spdlog::level::info,
              "event=restart_not_in_place local_ranks={} why=\"they did not announce in-place "
              "recovery (the muster Python package or muster-train do)\"",
              fmt::join(ranks, ","));
}

void Agent::ArmInPlaceRecovery(const ArmInPlace& arm) {
  if (!RecoversInPlace() || !group_) return;
  group_->EnableInPlace({.generation = arm.generation,
                         .timeout = std::chrono::milliseconds(
                             static_cast<int64_t>(options_.recovery_timeout_s * 1000)),
                         .hangs_elsewhere = arm.hangs_elsewhere},
                        arm.allowed);
}

void Agent::OnWorkerControl(uint64_t tag, std::string_view bytes) {
  if (!RecoversInPlace()) return;
  bool any = false;
  control_lines_[tag].Feed(bytes, [&](std::string_view line) {
    line.remove_suffix(1);  // the '\n'
    if (!IsControlLine(line)) return;
    any = true;
    control::WorkerMessage message;
    if (Status s = control::ParseWorkerMessage(line, message); !s.ok()) {
      // Today's restart path then applies to this worker (PROTOCOL.md).
      spdlog::warn("worker tag={}: {}", tag, s.message());
      return;
    }
    group_->OnControl(tag, message, Clock::now());
  });
  if (any) AfterGroupEvent();
}

void Agent::AdvanceRecovery() {
  if (!group_) return;
  const auto now = Clock::now();
  for (const RecoveryStep& step : recovery_.OnGroupEvent(RecoveryViewOf(*group_), now)) {
    if (const auto* paused = std::get_if<PauseBegan>(&step)) {
      spdlog::info("event=in_place_pause attempt={} failed_local_ranks={}{}", attempt(),
                   fmt::join(group_->failed_local_ranks(), ","),
                   paused->during_join ? " during_join=true" : "");
    } else if (std::holds_alternative<FailureKnown>(step)) {
      const WorkerFailure& first = group_->failures().front();
      const LocalFailure failure{first.status.ShellCode(), first.status.Describe()};
      Tell([&failure](auto& follower) { return follower.OnWorkersPausing(failure); });
      // What was done about the failure changed the group: read it again.
      AdvanceRecovery();
      return;
    } else if (std::holds_alternative<SurvivorsPaused>(step)) {
      // Static: they rejoin as the next attempt now; elastic: once the next
      // generation is assigned.
      Tell([](auto& follower) { return follower.OnWorkersPaused(); });
    } else if (const auto* ended = std::get_if<RecoveryEnded>(&step)) {
      const bool recovered = ended->how == RecoveryEnded::How::kRecovered;
      // Recovered, the follower arms the group for the next failure (static:
      // attempt() is now the attempt the survivors joined).
      Tell([recovered](auto& follower) { return follower.OnRecoveryEnded(recovered); });
      if (recovered) {
        spdlog::info("event=in_place_recovered attempt={} paused_ms={:.1f} total_ms={:.1f}",
                     attempt(), ended->paused_ms, ended->total_ms);
      } else if (ended->how == RecoveryEnded::How::kAbandoned) {
        spdlog::info("event=in_place_abandoned attempt={} why=\"the workers are being stopped\"",
                     attempt());
      } else {
        spdlog::warn("event=in_place_fallback attempt={} why=\"{}\"; restarting every worker",
                     attempt(), group_->fallback_reason());
      }
    }
  }
}

void Agent::StartReplacementsEarly(int attempt) {
  // The replacements wait for the store, sealed until every survivor has
  // left the attempt it recovers from.
  if (store_) store_->Seal();
  auto specs = PrepareWorkers(attempt, group_->failed_local_ranks());
  Status status = specs.status();
  const auto now = Clock::now();
  if (status.ok()) {
    recovery_.OnReplacementsStarted(static_cast<int>(specs->size()));
    status = group_->StartReplacements(std::move(specs).value(), now);
  }
  if (!status.ok()) {
    spdlog::error("{}", status.message());
    group_->AbandonRecovery(status.message(), now);
  }
}

void Agent::RejoinAttemptInPlace(int attempt) {
  // The next attempt meets a store with no key or connection of this one,
  // as a restart of every worker would (StartAttempt).
  if (store_) store_->Open(static_cast<uint64_t>(attempt) + 1);
  RejoinSurvivors(static_cast<uint64_t>(attempt), attempt);
}

void Agent::RejoinGeneration(const rdzv::Assignment& a) {
  EnterGeneration(a, /*in_place=*/true);
  RejoinSurvivors(a.generation, attempt());
}

void Agent::RejoinSurvivors(uint64_t generation, int attempt) {
  const auto now = Clock::now();
  recovery_.OnRejoinSent(now);
  std::vector<WorkerGroup::Rejoining> survivors;
  for (const int lr : group_->paused_local_ranks()) {
    control::Join join;
    join.generation = generation;
    join.rank = node_.global_rank_offset + lr;
    join.world_size = node_.world_size;
    join.group_rank = node_.group_rank;
    join.local_rank = PlanWorker(plan_, lr).virtual_local_rank ? 0 : lr;
    join.master_addr = node_.master_addr;
    join.master_port = node_.master_port;
    // Context::StoreNamespace() of the attempt, as its new processes read it.
    join.store_prefix = "muster/" + std::to_string(attempt) + "/";
    // One line per worker, as a start's spec is: who runs where now.
    spdlog::info(
        "event=in_place_rejoin gen={} rank={} local_rank={} world_size={} group_rank={} "
        "group_world_size={} master={}:{} pid={}",
        generation, join.rank, lr, join.world_size, join.group_rank, node_.group_world_size,
        join.master_addr, join.master_port, group_->PidOf(lr));
    // Its lines now say its new rank, as a new process's would.
    if (auto out = outputs_.find(group_->TagFor(lr));
        out != outputs_.end() && options_.prefix_output) {
      out->second->SetPrefix("[rank" + std::to_string(join.rank) + "]: ");
    }
    survivors.push_back({.local_rank = lr, .join = std::move(join)});
  }
  auto specs = PrepareWorkers(attempt, group_->failed_local_ranks());
  Status status = specs.status();
  if (status.ok()) {
    recovery_.OnReplacementsStarted(static_cast<int>(specs->size()));
    spdlog::info("event=in_place_join attempt={} survivors={} restarted={}", attempt,
                 survivors.size(), recovery_.replacements_started());
    status = group_->Rejoin(survivors, std::move(specs).value(), now);
  } else {
    group_->AbandonRecovery(status.message(), now);
  }
  if (!status.ok()) spdlog::error("{}", status.message());
  AfterGroupEvent();
}

}  // namespace muster
