// The Agent's in-place recovery (--recovery in-place): the worker group
// decides who pauses and when the survivors may rejoin (worker_group.h);
// this file reads the workers' control lines, renews the store between the
// two generations, tells the survivors where they now stand, starts the
// failed ranks again and logs how the recovery went.
//
// Static runs: the agent alone decides; the next attempt keeps the ranks.
// Elastic runs: ElasticFollower decides. A local failure pauses the local
// survivors, then is reported to the daemon (which counts a restart and
// forms the next generation); a generation that ends for another reason
// (a failure or death elsewhere, a newcomer) pauses every worker; the next
// assignment rejoins them, with the ranks and world size it gives. A
// generation that ends while they join it pauses them again, and the one
// after rejoins them: one recovery, joined twice, with no restart.
//
// Restarts: an in-place recovery counts as one restart against
// --max-restarts, as a restart of every worker would (the failure is the
// same; only its cost differs). With no restart left the job stops as
// before. A static recovery that falls back has used its attempt number
// (its early replacements ran under it), so the restart that follows counts
// a second one: attempt tags are never reused.
#include <spdlog/spdlog.h>

#include "launcher/agent.h"
#include "rendezvous/client/rendezvous_client.h"
#include "store/store_server.h"

namespace muster {
namespace {

double MillisecondsBetween(SteadyTime from, SteadyTime to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

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

void Agent::EnableInPlaceRecovery() {
  if (!RecoversInPlace()) return;
  // Elastic: `pause` names the generation, and the daemon keeps the restart count.
  group_->EnableInPlace(
      {.generation = elastic_ ? node_.generation : static_cast<uint64_t>(restart_count_),
       .timeout =
           std::chrono::milliseconds(static_cast<int64_t>(options_.recovery_timeout_s * 1000)),
       .hangs_elsewhere = elastic_ && node_.group_world_size > 1},
      elastic_ || restart_count_ < options_.max_restarts);
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
    group_->OnControl(tag, message, std::chrono::steady_clock::now());
  });
  if (any) AfterGroupEvent();
}

void Agent::AdvanceRecovery() {
  if (!group_) return;
  const auto now = std::chrono::steady_clock::now();
  const WorkerGroup::State state = group_->state();
  if (state == WorkerGroup::State::kRecovering && !recovery_began_) {
    recovery_began_ = now;
    paused_reported_ = false;
    attempt_begun_early_ = false;
    failures_handled_ = false;
    replacements_started_ = 0;
    spdlog::info("event=in_place_pause attempt={} failed_local_ranks={}", restart_count_,
                 fmt::join(group_->failed_local_ranks(), ","));
  } else if (rejoin_sent_ && state == WorkerGroup::State::kRecovering && !group_->joining()) {
    // The generation the survivors were joining ended first (PauseAll):
    // this recovery pauses again, and its failure stays handled. The
    // follower hears of the new pause once they are all paused.
    rejoin_sent_.reset();
    paused_reported_ = false;
    spdlog::info("event=in_place_pause attempt={} failed_local_ranks={} during_join=true",
                 restart_count_, fmt::join(group_->failed_local_ranks(), ","));
  }
  // The failure is known at the start, or (a hang probe) once the workers
  // that did not answer are killed.
  if (recovery_began_ && state == WorkerGroup::State::kRecovering && !failures_handled_) {
    if (const auto& failures = group_->failures(); !failures.empty()) {
      failures_handled_ = true;
      // Elastic: the job's failure restarts are the daemon's count, not the
      // generation number (membership changes make generations too).
      RecordAndPrintFailures(elastic_ ? node_.restart_count : restart_count_, options_.max_restarts,
                             /*in_place=*/true);
      if (elastic_) {
        Follow(follower_.OnWorkersPausing(failures.front().status.ShellCode(),
                                          failures.front().status.Describe()));
      } else {
        StartReplacementsEarly();
      }
    }
  }
  if (!recovery_began_) return;
  if (group_->ready_to_join()) {
    if (!elastic_) {
      RejoinInPlace();
    } else if (!paused_reported_) {
      // The follower rejoins them once the next generation is assigned.
      paused_reported_ = true;
      Follow(follower_.OnWorkersPaused());
    }
    return;
  }
  if (state == WorkerGroup::State::kRecovering) return;
  if (state == WorkerGroup::State::kRunning) {
    spdlog::info("event=in_place_recovered attempt={} paused_ms={:.1f} total_ms={:.1f}",
                 restart_count_, MillisecondsBetween(*recovery_began_, rejoin_sent_.value_or(now)),
                 MillisecondsBetween(*recovery_began_, now));
  } else {
    // The attempt begun for the recovery did not happen: the restart takes
    // its number (its early processes are gone before the restart starts:
    // the group settles first, so no tag is met twice).
    if (attempt_begun_early_) --restart_count_;
    if (group_->fallback_reason().empty()) {
      // Stopped from outside (a signal, the run's end, a fence): no fallback.
      spdlog::info("event=in_place_abandoned attempt={} why=\"the workers are being stopped\"",
                   restart_count_);
    } else {
      spdlog::warn("event=in_place_fallback attempt={} why=\"{}\"; restarting every worker",
                   restart_count_, group_->fallback_reason());
    }
  }
  recovery_began_.reset();
  rejoin_sent_.reset();
  attempt_begun_early_ = false;
  if (state == WorkerGroup::State::kRunning) EnableInPlaceRecovery();
}

void Agent::StartReplacementsEarly() {
  // The next attempt begins now: its new processes start while the
  // survivors pause (start-up is most of a replacement's cost), and wait for
  // the store, sealed until every survivor has left this attempt.
  ++restart_count_;
  attempt_begun_early_ = true;
  if (store_) store_->Seal();
  auto specs = PrepareWorkers(group_->failed_local_ranks());
  Status status = specs.status();
  const auto now = std::chrono::steady_clock::now();
  if (status.ok()) {
    replacements_started_ += static_cast<int>(specs->size());
    status = group_->StartReplacements(std::move(specs).value(), now);
  }
  if (!status.ok()) {
    spdlog::error("{}", status.message());
    group_->AbandonRecovery(status.message(), now);
  }
}

void Agent::RejoinInPlace() {
  // The next attempt meets a store with no key or connection of this one,
  // as a restart of every worker would (StartAttempt).
  if (store_) store_->Open(static_cast<uint64_t>(restart_count_) + 1);
  RejoinSurvivors(static_cast<uint64_t>(restart_count_));
}

void Agent::RejoinGeneration(const rdzv::Assignment& a) {
  EnterGeneration(a, /*in_place=*/true);
  RejoinSurvivors(a.generation);
}

void Agent::RejoinSurvivors(uint64_t generation) {
  rejoin_sent_ = std::chrono::steady_clock::now();
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
    join.store_prefix = "muster/" + std::to_string(restart_count_) + "/";
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
  auto specs = PrepareWorkers(group_->failed_local_ranks());
  Status status = specs.status();
  if (status.ok()) {
    replacements_started_ += static_cast<int>(specs->size());
    spdlog::info("event=in_place_join attempt={} survivors={} restarted={}", restart_count_,
                 survivors.size(), replacements_started_);
    status = group_->Rejoin(survivors, std::move(specs).value(), *rejoin_sent_);
  } else {
    group_->AbandonRecovery(status.message(), *rejoin_sent_);
  }
  if (!status.ok()) spdlog::error("{}", status.message());
  AfterGroupEvent();
}

}  // namespace muster
