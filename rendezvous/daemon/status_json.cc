#include "rendezvous/daemon/status_json.h"

#include "rendezvous/daemon/progress_json.h"
#include "rendezvous/daemon/replica_json.h"

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace muster::rdzv {
namespace {

using nlohmann::json;

json NodeJson(const NodeStatus& node) {
  json n = {
      {"node_id", node.node_id},
      {"host", node.host},
      {"state", node.member ? "member" : "waiting"},
      {"connected", node.connected},
      {"local_world_size", node.local_world_size},
      {"heartbeat_age_ms", node.heartbeat_age.count()},
  };
  if (node.member) {
    n["group_rank"] = node.group_rank;
    n["global_ranks"] = {node.global_rank_offset,
                         node.global_rank_offset + node.local_world_size - 1};
    if (node.steps_per_second) n["steps_per_second"] = *node.steps_per_second;
    n["straggler"] = node.straggler;
    AddNodeProgress(node, n);
  }
  return n;
}

json RunJson(const RunStatus& run) {
  json nodes = json::array();
  for (const NodeStatus& node : run.nodes) nodes.push_back(NodeJson(node));
  json r = {
      {"run_id", run.run_id},
      {"state", std::string(RunPhaseName(run.phase))},
      {"generation", run.generation},
      {"min_nodes", run.min_nodes},
      {"max_nodes", run.max_nodes},
      {"restart_count", run.restart_count},
      {"max_restarts", run.max_restarts},
      {"nodes", std::move(nodes)},
  };
  if (run.median_steps_per_second) {
    r["median_steps_per_second"] = *run.median_steps_per_second;
  }
  r["stragglers"] = run.stragglers;
  AddRunProgress(run, r);
  if (run.outcome) {
    r["result"] = run.outcome->succeeded ? "succeeded" : "failed";
    r["message"] = run.outcome->message;
  }
  return r;
}

}  // namespace

std::string StatusJson(const StatusSnapshot& snapshot) {
  json runs = json::array();
  for (const RunStatus& run : snapshot.runs) runs.push_back(RunJson(run));
  // Ids and hosts reach here checked as UTF-8 by the message codec; were one
  // not, a U+FFFD in the document beats an exception in the daemon.
  json doc{{"runs", std::move(runs)}};
  if (const auto& r = snapshot.replica) {
    doc["replica"] = ReplicaJson(*r);
  }
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace muster::rdzv
