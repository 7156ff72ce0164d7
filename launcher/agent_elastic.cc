// The Agent's elastic mode: the rendezvous daemon decides every generation;
// this node starts, stops and restarts its workers to follow it, reports
// their outcome, and fences itself when it loses the daemon.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <csignal>
#include <random>

#include "launcher/agent.h"
#include "launcher/failure_report.h"
#include "launcher/host_rules.h"
#include "launcher/local_identity.h"
#include "rendezvous/client/rendezvous_client.h"
#include "rendezvous/daemon/rendezvous_server.h"
#include "store/store_server.h"

namespace muster {
namespace {

std::string NewNodeId(const std::string& host) {
  std::random_device rd;
  return host + ":" + std::to_string(getpid()) + ":" + std::to_string(rd() % 100000);
}

}  // namespace

bool Agent::ServeRendezvousIfHost() {
  // Resolving names can block on DNS: only the c10d rule needs it.
  const bool endpoint_local =
      elastic_->host_if_local && !elastic_->is_host && EndpointIsThisMachine(elastic_->host);
  const RendezvousRole role = DecideRendezvousRole(*elastic_, endpoint_local);
  if (role == RendezvousRole::kJoin) {
    if (elastic_->host_if_local) {
      spdlog::info("event=rdzv_host serve=false why=\"endpoint host {} is not this machine\"",
                   elastic_->host);
    }
    return true;
  }
  rdzv::ServerOptions daemon;
  daemon.host = DaemonBindHost(elastic_->loopback_only, elastic_->host);
  daemon.port = elastic_->port;
  daemon.settings = elastic_->settings;
  daemon.token = elastic_->token;
  auto started = rdzv::RendezvousServer::Start(io_, daemon);
  if (!started.ok()) {
    if (role == RendezvousRole::kServe) {
      spdlog::error("{}", started.status().message());
      return false;
    }
    if (started.status().code() == Status::Code::kFailedPrecondition) {
      // Another agent on this host won the race, or a musterd runs here.
      spdlog::info(
          "event=rdzv_host serve=false why=\"port {} is in use: joining whoever serves it\"",
          elastic_->port);
    } else {
      // Nobody asked this agent to serve (a privileged port, say): someone
      // else may, as torchrun assumes; join_timeout bounds the wait if not.
      spdlog::warn("event=rdzv_host serve=false why=\"{}; joining as a client\"",
                   started.status().message());
    }
    return true;
  }
  embedded_daemon_ = std::move(started).value();
  if (elastic_->port == 0) elastic_->port = embedded_daemon_->port();
  if (role == RendezvousRole::kServeIfFree) {
    spdlog::info("event=rdzv_host serve=true why=\"endpoint host {} is this machine\"",
                 elastic_->host);
  }
  elastic_->is_host = true;
  return true;
}

int Agent::RunElastic() {
  // Every agent serves a store from the start: whichever node becomes master
  // already has its port bound, and no port is ever handed on unbound.
  const std::string bind_host = StoreBindHost(elastic_->loopback_only, options_.local_addr);
  auto server = store::StoreServer::Start(io_, bind_host,
                                          static_cast<uint16_t>(options_.master_port.value_or(0)));
  if (!server.ok()) {
    spdlog::error("worker store: {}", server.status().message());
    return 1;
  }
  store_ = std::move(server).value();
  // Sealed until this node is the master of a generation: no worker may use
  // a store before its generation is formed (see StartGeneration).
  store_->Seal();

  if (!ServeRendezvousIfHost()) return 1;
  // Fault plans treat the agent that serves the rendezvous apart: known only now.
  StartFaultInjection();
  if (auto s = PrepareRunDirectory(); !s.ok()) {
    spdlog::error("{}", s.message());
    return 1;
  }

  rdzv::ClientOptions client;
  client.host = elastic_->host;
  client.port = elastic_->port;
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
  spdlog::info("event=elastic run_id={} node={} rendezvous={}:{} is_host={} store_port={}",
               plan_.run_id, client.join.node_id, client.host, client.port, elastic_->is_host,
               store_->port());

  rdzv::RendezvousClient::Callbacks callbacks;
  callbacks.on_assignment = [this](const rdzv::Assignment& a) { OnAssignment(a); };
  callbacks.on_waiting = [this](const std::string& reason) {
    spdlog::info("event=waiting reason=\"{}\"", reason);
    pending_.reset();
    // The generation is ending everywhere: its workers lose the store now,
    // and the next one meets an empty store.
    store_->Seal();
    if (group_ && !group_->finished()) StopGroupFor(StopReason::kReassigned, SIGTERM);
  };
  callbacks.on_fence = [this](const std::string& why) {
    spdlog::warn("event=self_fence why=\"{}\"; stopping workers", why);
    pending_.reset();
    current_.reset();
    client_->SetCurrent(std::nullopt);
    store_->Seal();
    if (group_ && !group_->finished()) StopGroupFor(StopReason::kFenced, SIGKILL);
  };
  callbacks.on_run_ended = [this](bool succeeded, const std::string& message) {
    run_ended_ = true;
    run_succeeded_ = succeeded;
    (succeeded ? spdlog::info("event=run_ended result=succeeded message=\"{}\"", message)
               : spdlog::error("event=run_ended result=failed message=\"{}\"", message));
    if (group_ && !group_->finished()) {
      StopGroupFor(StopReason::kRunEnded, SIGTERM);
    } else if (!settling_) {
      Finish(succeeded ? 0 : FailureExitCode());
    }
  };
  callbacks.on_fatal = [this](const std::string& message) {
    spdlog::error("rendezvous: {}", message);
    run_ended_ = true;
    if (group_ && !group_->finished()) {
      StopGroupFor(StopReason::kRunEnded, SIGTERM);
    } else if (!settling_) {
      Finish(FailureExitCode());
    }
  };
  client_ = std::make_unique<rdzv::RendezvousClient>(io_, std::move(client), std::move(callbacks));
  WaitForSignal();
  client_->Start();
  io_.run();
  return exit_code_;
}

void Agent::OnAssignment(const rdzv::Assignment& a) {
  if (ran_generation_ && a.generation <= *ran_generation_) {
    // Workers never start twice for one generation. The daemon repeats an
    // assignment when a member rejoins, or after its restart rebuilt the run.
    if (a.generation < *ran_generation_) return;  // stale
    // Still running (or settling): carry on; the outcome is reported when
    // the workers are done.
    if (settling_ || (group_ && !group_->finished())) return;
    // Already done here: say so again, since a restarted daemon forgot it.
    if (ran_generation_succeeded_) {
      client_->ReportSucceeded(a.generation);
    } else {
      client_->ReportWorkerFailure(a.generation, FailureExitCode(),
                                   "the workers of generation " + std::to_string(a.generation) +
                                       " already stopped on this node");
    }
    return;
  }
  pending_ = a;
  if (group_ && !group_->finished()) {
    StopGroupFor(StopReason::kReassigned, SIGTERM);
  } else if (!settling_) {
    StartGeneration(a);
  }
}

void Agent::StopGroupFor(StopReason reason, int sig) {
  // A signal outranks everything (Ctrl-C exits 128+sig); a fence or a run's
  // end outranks a reassignment already under way.
  if (stop_reason_ != StopReason::kSignal &&
      (stop_reason_ == StopReason::kNone || reason != StopReason::kReassigned)) {
    stop_reason_ = reason;
  }
  group_->Stop(sig, std::chrono::steady_clock::now());
  AfterGroupEvent();
}

void Agent::StartGeneration(const rdzv::Assignment& a) {
  pending_.reset();
  current_ = a;
  ran_generation_ = a.generation;
  ran_generation_succeeded_ = false;
  client_->SetCurrent(a);
  node_ = a;
  // torch namespaces its store keys by TORCHELASTIC_RESTART_COUNT. muster sets
  // it to generation-1, unique per generation, so every generation (a
  // membership change included) gets fresh keys. torchrun 1.13 counts only
  // failure restarts (max_restarts - remaining_restarts) and relies on a new
  // store per rendezvous instead; the daemon's restart_count (below) is that.
  restart_count_ = static_cast<int>(a.generation) - 1;
  stop_reason_ = StopReason::kNone;
  // A fresh store per generation: torch >= 2.6 no longer prefixes its keys
  // by attempt, so keys left by an earlier generation would be read as this
  // one's. The daemon forms a generation only after every worker of the
  // previous one is gone (draining), and this store was sealed since then:
  // no key and no connection of an earlier generation is in it. Workers of
  // other nodes that connect before this point wait in the listen backlog.
  if (a.group_rank == 0) {
    store_->Open(a.generation);
  } else {
    store_->Seal();
  }
  spdlog::info(
      "event=generation gen={} group_rank={} group_world_size={} ranks={}..{} world_size={} "
      "master={}:{} restart_count={}",
      a.generation, a.group_rank, a.group_world_size, a.global_rank_offset,
      a.global_rank_offset + a.local_world_size - 1, a.world_size, a.master_addr, a.master_port,
      a.restart_count);
  if (auto s = StartAttempt(); !s.ok()) {
    spdlog::error("{}", s.message());
    if (group_ && !group_->finished()) {
      // Some workers were spawned and the group is stopping them: settle as
      // for a failure once they are gone. AfterGroupEvent arms the SIGKILL
      // deadline, as the static path does.
      start_failure_ = s.message();
      AfterGroupEvent();
      return;
    }
    current_.reset();
    client_->SetCurrent(std::nullopt);
    client_->ReportWorkerFailure(a.generation, 127, s.message());
  }
}

void Agent::SettleElastic() {
  const StopReason reason = stop_reason_;
  stop_reason_ = StopReason::kNone;
  const std::optional<std::string> start_failure = std::move(start_failure_);
  start_failure_.reset();
  const auto state = group_->state();
  if (reason == StopReason::kSignal) {
    Finish(128 + received_signal_);
    return;
  }
  if (state == WorkerGroup::State::kSucceeded && current_) {
    spdlog::info("event=workers_succeeded gen={}", current_->generation);
    ran_generation_succeeded_ = true;
    client_->ReportSucceeded(current_->generation);
  } else if (state == WorkerGroup::State::kFailed && reason == StopReason::kNone && current_ &&
             start_failure) {
    client_->ReportWorkerFailure(current_->generation, 127, *start_failure);
    current_.reset();
    client_->SetCurrent(std::nullopt);
  } else if (state == WorkerGroup::State::kFailed && reason == StopReason::kNone && current_) {
    const auto& failures = group_->failures();
    const bool will_restart = current_->restart_count < current_->max_restarts;
    if (!failures.empty()) {
      local_root_cause_ = failures.front();
      WriteAll(STDERR_FILENO,
               FormatFailureReport(failures, ReportContext{host_, current_->restart_count,
                                                           current_->max_restarts, will_restart}));
    }
    client_->ReportWorkerFailure(current_->generation, FailureExitCode(),
                                 failures.empty() ? "" : failures.front().status.Describe());
    // The generation failed: whatever comes next starts from an empty store.
    store_->Seal();
    current_.reset();
    client_->SetCurrent(std::nullopt);
  } else if (reason != StopReason::kNone) {
    current_.reset();
    client_->SetCurrent(std::nullopt);
  }
  if (run_ended_) {
    Finish(run_succeeded_ ? 0 : FailureExitCode());
    return;
  }
  if (pending_) StartGeneration(*pending_);
}

}  // namespace muster
