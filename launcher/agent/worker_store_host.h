// WorkerStoreHost: the worker store this node hosts (store/store_server.h),
// configured by the rules of store_policy.h, and renewed so that every
// attempt meets a store with no key or connection of an earlier one.
//   - Static runs: node 0 hosts it from the start, admitting as
//     StaticStoreAdmission says; RenewForAttempt opens it afresh for each
//     restart.
//   - Elastic runs: every agent hosts one from the start (whichever node
//     becomes master already has its port bound, and no port is ever handed
//     on unbound), sealed until this node is a generation's master;
//     EnterGeneration then admits that generation's members and opens it.
// Errors and warnings name the store ("worker store: ...").
//
// Single-threaded: on the agent's io_context. Tests:
// tests/unit/launcher_worker_store_host_test.cc.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "common/status.h"
#include "launcher/plan/launch_options.h"
#include "rendezvous/protocol/messages.h"

namespace muster {
namespace store {
class StoreServer;
}

class WorkerStoreHost {
 public:
  // Static, node 0: listens for `master_addr`'s nodes at `port` (0: any).
  static Result<std::unique_ptr<WorkerStoreHost>> StartStatic(boost::asio::io_context& io,
                                                              const LaunchOptions& options,
                                                              const std::string& master_addr,
                                                              int nodes, int port);
  // Elastic: on --master-port (a free port with --standalone or without it),
  // on loopback when every node is on this machine; sealed.
  static Result<std::unique_ptr<WorkerStoreHost>> StartElastic(boost::asio::io_context& io,
                                                               const LaunchOptions& options,
                                                               bool loopback_only);
  ~WorkerStoreHost();

  uint16_t port() const;
  // The member addresses that came with this node's assignment to
  // `generation` (the master's only): admitted when that generation starts.
  void SetMembers(uint64_t generation, std::vector<std::string> member_addrs);
  // Elastic: `assignment` is this node's place now. The master admits its
  // members (SetMembers, if they came for this generation) and opens the
  // store for it; any other node seals it.
  void EnterGeneration(const rdzv::Assignment& assignment);
  // Static: attempt `attempt` (> 0) meets a store opened afresh for it.
  void RenewForAttempt(int attempt);
  // The workers lose the store; the next generation meets an empty one.
  void Seal();
  uint64_t refused_connections() const;
  void Stop();

 private:
  WorkerStoreHost(const LaunchOptions& options, std::unique_ptr<store::StoreServer> server);

  const LaunchOptions& options_;
  std::unique_ptr<store::StoreServer> server_;
  uint64_t members_generation_ = 0;
  std::vector<std::string> members_;
};

}  // namespace muster
