// RendezvousHandler: the seam between the agent and however nodes agree on
// membership. The static handler below computes the answer locally; the
// elastic daemon (rendezvous/) plugs in behind the same interface.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "launcher/node_assignment.h"

namespace muster {

class RendezvousHandler {
 public:
  virtual ~RendezvousHandler() = default;
  RendezvousHandler(const RendezvousHandler&) = delete;
  RendezvousHandler& operator=(const RendezvousHandler&) = delete;

  // Joins the next round with `local_world_size` workers on this node and
  // returns this node's assignment. May block until the round closes.
  virtual Result<NodeAssignment> NextRound(int local_world_size) = 0;

  // One line for logs: "static nnodes=2 node_rank=1 master=10.0.0.1:29500".
  virtual std::string Describe() const = 0;

 protected:
  RendezvousHandler() = default;
};

// Static membership (torchrun's `static` backend and --standalone): a fixed
// number of nodes, each told its rank, all with the same worker count. Node 0
// hosts the store at master_addr:master_port (port 0: any port, single node only).
class StaticRendezvous final : public RendezvousHandler {
 public:
  StaticRendezvous(int num_nodes, int node_rank, std::string master_addr, int master_port);

  Result<NodeAssignment> NextRound(int local_world_size) override;
  std::string Describe() const override;

 private:
  int num_nodes_;
  int node_rank_;
  std::string master_addr_;
  int master_port_;
  uint64_t rounds_ = 0;
};

}  // namespace muster
