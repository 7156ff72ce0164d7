// The Agent's static mode (torchrun's static rendezvous): this node's place
// is fixed from the start, node 0 serves the worker store, and each node
// restarts its own workers within --max-restarts. What to do on each event
// is StaticFollower's decision; this file sets the node up and carries its
// actions out.
#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "launcher/agent/agent.h"
#include "launcher/agent/worker_store_host.h"

namespace muster {

int Agent::RunStatic() {
  if (node_.group_rank == 0) {
    auto host = WorkerStoreHost::StartStatic(io_, options_, node_.master_addr,
                                             node_.group_world_size, node_.master_port);
    if (!host.ok()) {
      spdlog::error("{}", host.status().message());
      return 1;
    }
    store_ = std::move(host).value();
    node_.master_port = store_->port();
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
  AfterWarmUp([this] { Carry(machine_.OnStart()); });
  io_.run();
  return exit_code_;
}

}  // namespace muster
