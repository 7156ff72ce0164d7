// The Agent's elastic mode: the rendezvous daemon decides every generation;
// this node starts, stops and restarts its workers to follow it, reports
// their outcome, and fences itself when it loses the daemon. What to do on
// each event is ElasticFollower's decision; this file wires the rendezvous
// client and the worker group to it and carries its actions out.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <random>

#include "common/clock.h"
#include "launcher/agent/agent.h"
#include "launcher/agent/embedded_rendezvous.h"
#include "launcher/agent/worker_store_host.h"
#include "launcher/plan/host_rules.h"
#include "launcher/plan/local_identity.h"
#include "launcher/report/failure_report.h"

namespace muster {
namespace {

std::string NewNodeId(const std::string& host) {
  std::random_device rd;
  return host + ":" + std::to_string(getpid()) + ":" + std::to_string(rd() % 100000);
}

}  // namespace

int Agent::RunElastic() {
  for (const std::string& warning : elastic_->file_warnings) spdlog::warn("{}", warning);
  // Every agent hosts a store from the start, sealed (worker_store_host.h).
  auto store = WorkerStoreHost::StartElastic(io_, options_, elastic_->loopback_only);
  if (!store.ok()) {
    spdlog::error("{}", store.status().message());
    return 1;
  }
  store_ = std::move(store).value();

  auto embedded = ServeRendezvousIfHost(io_, *elastic_);
  if (!embedded.ok()) {
    spdlog::error("{}", embedded.status().message());
    return 1;
  }
  embedded_daemon_ = std::move(embedded).value();
  // Fault plans treat the agent that serves the rendezvous apart: known only now.
  StartFaultInjection();
  if (auto s = PrepareRunDirectory(); !s.ok()) {
    spdlog::error("{}", s.message());
    return 1;
  }

  rdzv::ClientOptions client;
  client.endpoints = elastic_->replicas;
  if (client.endpoints.empty() || elastic_->is_host) {
    // This agent's own daemon (its port known only now), or the one endpoint.
    client.endpoints = {{elastic_->host, elastic_->port}};
  }
  client.token = elastic_->token;
  client.settings = elastic_->settings;
  client.join.run_id = plan_.run_id;
  client.join.node_id = NewNodeId(host_);
  client.join.host = host_;
  client.join.local_world_size = plan_.nproc_per_node;
  client.join.min_nodes = options_.min_nodes;
  client.join.max_nodes = options_.max_nodes;
  client.join.max_restarts = options_.max_restarts;
  client.join.store_addr = elastic_->loopback_only ? "127.0.0.1" : options_.local_addr;
  client.join.store_port = store_->port();
  std::string rendezvous;
  for (const Endpoint& e : client.endpoints) {
    if (!rendezvous.empty()) rendezvous += ',';
    rendezvous += e.Text();
  }
  spdlog::info("event=elastic run_id={} node={} rendezvous={} is_host={} store_port={}",
               plan_.run_id, client.join.node_id, rendezvous, elastic_->is_host, store_->port());

  // The client's news become the follower's events; logging them is the
  // agent's part, deciding what they mean the follower's.
  rdzv::RendezvousClient::Callbacks callbacks;
  // A generation's end pauses the workers in place when they all can.
  callbacks.on_member_addrs = [this](const rdzv::Assignment& a,
                                     const std::vector<std::string>& member_addrs) {
    store_->SetMembers(a.generation, member_addrs);
  };
  callbacks.on_assignment = [this](const rdzv::Assignment& a) {
    Carry(machine_.OnAssignment(a, group_ && group_->CanPauseAll()));
  };
  callbacks.on_waiting = [this](const std::string& reason) {
    // Workers of this node are about to stop because of another node: the
    // user must read why, before their tracebacks leave them guessing.
    const bool stops_workers_here = group_ && !group_->finished() && !settling_;
    (stops_workers_here ? spdlog::warn("event=waiting reason=\"{}\"", reason)
                        : spdlog::info("event=waiting reason=\"{}\"", reason));
    Carry(machine_.OnWaiting(group_ && group_->CanPauseAll()));
  };
  callbacks.on_fence = [this](const std::string& why) {
    spdlog::warn("event=self_fence why=\"{}\"; stopping workers", why);
    Carry(machine_.OnFence());
  };
  callbacks.on_run_ended = [this](bool succeeded, const std::string& message) {
    // A failure is reported once: where this node's own report said the
    // job ends, the rendezvous's word of it adds nothing at the default level.
    if (succeeded || reported_job_end_) {
      spdlog::info("event=run_ended result={} message=\"{}\"", succeeded ? "succeeded" : "failed",
                   message);
    } else {
      spdlog::error("event=run_ended result=failed message=\"{}\"", message);
    }
    Carry(machine_.OnRunEnded(succeeded));
  };
  callbacks.on_fatal = [this](const std::string& message) {
    spdlog::error("{}", message);
    Carry(machine_.OnRendezvousFailed());
  };
  client_ = connect_rendezvous_(io_, std::move(client), std::move(callbacks));
  // The ranks' compute times go to the daemon, which judges across nodes.
  stragglers_.SetPublish(
      [this](std::vector<uint64_t> compute_us) { client_->SetCompute(std::move(compute_us)); });
  WaitForSignal();
  // A node joins once its warm process is ready: its workers, whenever the
  // generation forms, start warm (a node joining a running job warms up
  // before the others stop for it).
  AfterWarmUp([this] { client_->Start(); });
  io_.run();
  return exit_code_;
}

void Agent::StopGroup(int sig) {
  group_->Stop(sig, Clock::now());
  AfterGroupEvent();
}

void Agent::StartGeneration(const LaunchGeneration& start) {
  EnterGeneration(start.assignment, /*in_place=*/false);
  if (auto s = StartAttempt(AttemptOf(start.assignment.generation), start.in_place); !s.ok()) {
    spdlog::error("{}", s.message());
    // Some workers may have been spawned, and the group stops them: the
    // follower settles as for a failure once they are gone.
    Carry(machine_.OnStartFailed(s.message(), group_ && !group_->finished()));
  }
}

void Agent::EnterGeneration(const rdzv::Assignment& a, bool in_place) {
  client_->SetCurrent(a);
  node_ = a;
  // attempt() follows node_: generation-1 (AttemptOf). torch namespaces its
  // store keys by TORCHELASTIC_RESTART_COUNT, the attempt, unique per
  // generation, so every generation (a membership change included) gets
  // fresh keys. torchrun 1.13 counts only failure restarts (max_restarts -
  // remaining_restarts) and relies on a new store per rendezvous instead;
  // the daemon's restart_count (below) is that.
  //
  // A fresh store per generation, opened by the master (worker_store_host.h).
  store_->EnterGeneration(a);
  spdlog::info(
      "event=generation gen={} group_rank={} group_world_size={} ranks={}..{} world_size={} "
      "master={}:{} TORCHELASTIC_RESTART_COUNT={} failure_restarts={}/{}{}",
      a.generation, a.group_rank, a.group_world_size, a.global_rank_offset,
      a.global_rank_offset + a.local_world_size - 1, a.world_size, a.master_addr, a.master_port,
      attempt(), a.restart_count, a.max_restarts, in_place ? " in_place=true" : "");
}

}  // namespace muster
