// The Agent's in-place recovery (--recovery in-place): the worker group
// decides who pauses and when the survivors may rejoin (worker_group.h);
// this file reads the workers' control lines, renews the store between the
// two generations, tells the survivors where they now stand, starts the
// failed ranks again and logs how the recovery went.
//
// NodeMachine decides: InPlaceRecovery says how a recovery goes (began,
// failure known, survivors paused, ended), the mode's follower what the node
// does about it.
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
#include "launcher/agent/agent.h"

namespace muster {
namespace {

// Control messages start with a verb; progress lines with a digit, fault
// reports with "inject", and "stacks" is the step hooks' (progress_report.h).
bool IsControlLine(std::string_view line) {
  return !line.empty() && line[0] >= 'a' && line[0] <= 'z' && !line.starts_with("inject") &&
         !line.starts_with("stacks ");
}

}  // namespace

void Agent::LogWhyNotInPlace(const ExplainNotInPlace& explain) const {
  if (!group_) return;
  const std::vector<int> ranks = group_->local_ranks_not_in_place();
  if (ranks.empty()) return;  // a fallback, logged as event=in_place_fallback
  spdlog::log(explain.asked ? spdlog::level::warn : spdlog::level::info,
              "event=restart_not_in_place local_ranks={} why=\"they did not announce in-place "
              "recovery (the muster Python package or muster-train do)\"",
              fmt::join(ranks, ","));
}

void Agent::ArmInPlaceRecovery(const ArmInPlace& arm) {
  // The machine returns ArmInPlace only where the --recovery rule allows.
  if (!group_) return;
  group_->EnableInPlace({.generation = arm.generation,
                         .timeout = std::chrono::milliseconds(
                             static_cast<int64_t>(options_.recovery_timeout_s * 1000)),
                         .hangs_elsewhere = arm.hangs_elsewhere},
                        arm.allowed);
}

void Agent::OnWorkerControl(uint64_t tag, std::string_view lines) {
  if (!machine_.recovers_in_place()) return;
  bool any = false;
  while (!lines.empty()) {
    const auto newline = lines.find('\n');
    std::string_view line = lines.substr(0, newline);
    lines.remove_prefix(newline == std::string_view::npos ? lines.size() : newline + 1);
    if (!IsControlLine(line)) continue;
    any = true;
    control::WorkerMessage message;
    if (Status s = control::ParseWorkerMessage(line, message); !s.ok()) {
      // Today's restart path then applies to this worker (PROTOCOL.md).
      spdlog::warn("worker tag={}: {}", tag, s.message());
      continue;
    }
    group_->OnControl(tag, message, Clock::now());
  }
  if (any) AfterGroupEvent();
}

void Agent::AdvanceRecovery() {
  if (!group_) return;
  Carry(machine_.OnGroupEvent(GroupViewOf(*group_), Clock::now()));
}

void Agent::AnnouncePauseBegan(const AnnouncePause& pause) const {
  spdlog::info("event=in_place_pause attempt={} failed_local_ranks={}{}", pause.attempt,
               fmt::join(group_->failed_local_ranks(), ","),
               pause.during_join ? " during_join=true" : "");
}

void Agent::AnnounceEnd(const AnnounceRecoveryEnded& end) const {
  const RecoveryEnded& ended = end.ended;
  switch (ended.how) {
    case RecoveryEnded::How::kRecovered:
      spdlog::info("event=in_place_recovered attempt={} paused_ms={:.1f} total_ms={:.1f}",
                   end.attempt, ended.paused_ms, ended.total_ms);
      return;
    case RecoveryEnded::How::kAbandoned:
      spdlog::info("event=in_place_abandoned attempt={} why=\"the workers are being stopped\"",
                   end.attempt);
      return;
    case RecoveryEnded::How::kFellBack:
      spdlog::warn("event=in_place_fallback attempt={} why=\"{}\"; restarting every worker",
                   end.attempt, group_->fallback_reason());
      return;
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
    machine_.OnReplacementsStarted(static_cast<int>(specs->size()));
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
  if (store_) store_->RenewForAttempt(attempt);
  RejoinSurvivors(static_cast<uint64_t>(attempt), attempt);
}

void Agent::RejoinGeneration(const rdzv::Assignment& a) {
  EnterGeneration(a, /*in_place=*/true);
  RejoinSurvivors(a.generation, AttemptOf(a.generation));
}

void Agent::RejoinSurvivors(uint64_t generation, int attempt) {
  const auto now = Clock::now();
  machine_.OnRejoinSent(now);
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
    outputs_.SetRank(group_->TagFor(lr), join.rank);
    survivors.push_back({.local_rank = lr, .join = std::move(join)});
  }
  auto specs = PrepareWorkers(attempt, group_->failed_local_ranks());
  Status status = specs.status();
  if (status.ok()) {
    machine_.OnReplacementsStarted(static_cast<int>(specs->size()));
    spdlog::info("event=in_place_join attempt={} survivors={} restarted={}", attempt,
                 survivors.size(), machine_.replacements_started());
    status = group_->Rejoin(survivors, std::move(specs).value(), now);
  } else {
    group_->AbandonRecovery(status.message(), now);
  }
  if (!status.ok()) spdlog::error("{}", status.message());
  AfterGroupEvent();
}

}  // namespace muster
