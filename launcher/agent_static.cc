// The Agent's static mode (torchrun's static rendezvous): this node's place
// is fixed from the start, node 0 serves the worker store, and each node
// restarts its own workers within --max-restarts. What to do on each event
// is StaticFollower's decision; this file sets the node up and carries its
// actions out.
#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "launcher/agent.h"
#include "launcher/host_rules.h"
#include "launcher/store_policy.h"
#include "store/store_server.h"

namespace muster {

int Agent::RunStatic() {
  if (node_.group_rank == 0) {
    const std::string bind_host =
        StaticStoreBindHost(node_.master_addr, node_.group_world_size,
                            AllNodesOnThisMachine({node_.master_addr}, options_.local_addr));
    auto server = store::StoreServer::Start(
        io_, bind_host, static_cast<uint16_t>(node_.master_port), StoreLimits(options_));
    if (!server.ok()) {
      spdlog::error("worker store: {}", server.status().message());
      return 1;
    }
    store_ = std::move(server).value();
    node_.master_port = store_->port();
    const StoreAdmissionChoice admission =
        StaticStoreAdmission(options_, bind_host, node_.master_port);
    if (!admission.warning.empty()) spdlog::warn("{}", admission.warning);
    store_->SetAdmission(admission.admission);
  }
  if (auto s = PrepareRunDirectory(); !s.ok()) {
    spdlog::error("{}", s.message());
    return 1;
  }
  spdlog::info(
      "run_id={} rendezvous=static node_rank={} nnodes={} nproc_per_node={} world_size={} "
      "master={}:{} gpus={} ({})",
      plan_.run_id, node_.group_rank, node_.group_world_size, node_.local_world_size,
      node_.world_size, node_.master_addr, node_.master_port, plan_.gpus.ids.size(),
      plan_.gpus.source);

  WaitForSignal();
  AfterWarmUp([this] { Follow(static_follower_.OnStart()); });
  io_.run();
  return exit_code_;
}

void Agent::Follow(const StaticActions& actions) {
  // In the order given. A start that fails feeds the follower again and
  // carries out its answer; the follower never puts an action after a start.
  for (const StaticAction& action : actions) {
    if (const auto* start = std::get_if<StartAttemptWorkers>(&action)) {
      if (start->attempt > 0) {
        spdlog::info("restarting workers: attempt={} of max_restarts={}", start->attempt,
                     options_.max_restarts);
      }
      if (auto s = StartAttempt(start->attempt, start->in_place); !s.ok()) {
        spdlog::error("{}", s.message());
        const bool workers_stopping = group_ && !group_->finished();
        Follow(static_follower_.OnStartFailed(workers_stopping));
        // The workers that did start stop: the deadline that escalates to
        // SIGKILL is armed, and their exits settle the attempt.
        if (workers_stopping) AfterGroupEvent();
        return;
      }
      // Only the hang deadline to arm: nothing has happened to the new
      // workers yet.
      ArmTimer();
    } else if (const auto* stop = std::get_if<StopWorkers>(&action)) {
      StopGroup(stop->signal);
    } else if (const auto* early = std::get_if<StartReplacements>(&action)) {
      StartReplacementsEarly(early->attempt);
    } else if (const auto* rejoin = std::get_if<RejoinAttempt>(&action)) {
      RejoinAttemptInPlace(rejoin->attempt);
    } else if (const auto* local = std::get_if<ReportFailureLocally>(&action)) {
      ReportFailureHere(*local);
    } else if (const auto* arm = std::get_if<ArmInPlace>(&action)) {
      ArmInPlaceRecovery(*arm);
    } else if (const auto* abandon = std::get_if<AbandonRecovery>(&action)) {
      group_->AbandonRecovery(abandon->reason, Clock::now());
    } else if (const auto* succeeded = std::get_if<AttemptSucceeded>(&action)) {
      spdlog::info("attempt={} all {} workers succeeded", succeeded->attempt,
                   node_.local_world_size);
    } else if (const auto* finish = std::get_if<muster::Finish>(&action)) {
      Finish(finish->exit_code);
    }
  }
}

}  // namespace muster
