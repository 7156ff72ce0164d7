#include "launcher/agent/worker_store_host.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "launcher/plan/host_rules.h"
#include "launcher/plan/store_policy.h"
#include "store/store_server.h"

namespace muster {

WorkerStoreHost::WorkerStoreHost(const LaunchOptions& options,
                                 std::unique_ptr<store::StoreServer> server)
    : options_(options), server_(std::move(server)) {}

WorkerStoreHost::~WorkerStoreHost() = default;

Result<std::unique_ptr<WorkerStoreHost>> WorkerStoreHost::StartStatic(
    boost::asio::io_context& io, const LaunchOptions& options, const std::string& master_addr,
    int nodes, int port) {
  const std::string bind_host = StaticStoreBindHost(
      master_addr, nodes, AllNodesOnThisMachine({master_addr}, options.local_addr));
  auto server =
      store::StoreServer::Start(io, bind_host, static_cast<uint16_t>(port), StoreLimits(options));
  if (!server.ok()) return Status::IoError("worker store: " + server.status().message());
  std::unique_ptr<WorkerStoreHost> host(new WorkerStoreHost(options, std::move(server).value()));
  const StoreAdmissionChoice admission = StaticStoreAdmission(options, bind_host, host->port());
  if (!admission.warning.empty()) spdlog::warn("{}", admission.warning);
  host->server_->SetAdmission(admission.admission);
  return host;
}

Result<std::unique_ptr<WorkerStoreHost>> WorkerStoreHost::StartElastic(boost::asio::io_context& io,
                                                                       const LaunchOptions& options,
                                                                       bool loopback_only) {
  const std::string bind_host = StoreBindHost(loopback_only, options.local_addr);
  // torchrun's --standalone ignores --master-port (its store is the
  // rendezvous's, on a free port): a port taken by another job must not
  // fail a run that never needed it.
  const int port = options.standalone ? 0 : options.master_port.value_or(0);
  if (options.standalone && options.master_port) {
    spdlog::info("--master-port {} has no effect with --standalone (the store takes a free port)",
                 *options.master_port);
  }
  auto server =
      store::StoreServer::Start(io, bind_host, static_cast<uint16_t>(port), StoreLimits(options));
  if (!server.ok()) return Status::IoError("worker store: " + server.status().message());
  std::unique_ptr<WorkerStoreHost> host(new WorkerStoreHost(options, std::move(server).value()));
  // Sealed until this node is the master of a generation: no worker may use
  // a store before its generation is formed.
  host->server_->Seal();
  return host;
}

uint16_t WorkerStoreHost::port() const { return server_->port(); }

void WorkerStoreHost::SetMembers(uint64_t generation, std::vector<std::string> member_addrs) {
  members_generation_ = generation;
  members_ = std::move(member_addrs);
}

void WorkerStoreHost::EnterGeneration(const rdzv::Assignment& a) {
  // A fresh store per generation: torch >= 2.6 no longer prefixes its keys
  // by attempt, so keys left by an earlier generation would be read as this
  // one's. The daemon forms a generation only after every worker of the
  // previous one is gone (draining), and this store was sealed since then:
  // no key and no connection of an earlier generation is in it. Workers of
  // other nodes that connect before this point wait in the listen backlog.
  if (a.group_rank != 0) {
    server_->Seal();
    return;
  }
  // Admission first: Open() closes every earlier connection and accepts
  // under the rule in force.
  static const std::vector<std::string> kNone;
  const StoreAdmissionChoice admission =
      ElasticStoreAdmission(options_, members_generation_ == a.generation ? members_ : kNone);
  if (!admission.warning.empty()) spdlog::warn("{}", admission.warning);
  server_->SetAdmission(admission.admission);
  server_->Open(a.generation);
}

void WorkerStoreHost::RenewForAttempt(int attempt) {
  server_->Open(static_cast<uint64_t>(attempt) + 1);
}

void WorkerStoreHost::Seal() { server_->Seal(); }

uint64_t WorkerStoreHost::refused_connections() const { return server_->refused_connections(); }

void WorkerStoreHost::Stop() { server_->Stop(); }

}  // namespace muster
