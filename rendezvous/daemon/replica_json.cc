#include "rendezvous/daemon/replica_json.h"

#include <string>

namespace muster::rdzv {

nlohmann::json ReplicaJson(const ReplicaSummary& replica) {
  nlohmann::json standbys = nlohmann::json::array();
  for (const std::string& address : replica.replicas) {
    if (address != replica.leader) standbys.push_back(address);
  }
  return nlohmann::json{{"self", replica.self},
                        {"role", replica.role},
                        {"epoch", replica.epoch},
                        {"leader", replica.leader},
                        {"standbys", standbys}};
}

}  // namespace muster::rdzv
