#include "rendezvous/daemon/progress_json.h"

#include <utility>

namespace muster::rdzv {

using nlohmann::json;

namespace {

double Seconds(std::chrono::milliseconds ms) { return static_cast<double>(ms.count()) / 1000.0; }

json GoodputJson(const Goodput& g) {
  return {{"ratio", g.ratio()},
          {"wall_s", Seconds(g.wall)},
          {"productive_s", Seconds(g.productive)},
          {"to_first_step_s", Seconds(g.to_first_step)},
          {"downtime_s", Seconds(g.downtime)},
          {"redone_s", Seconds(g.redone)},
          {"tail_s", Seconds(g.tail)},
          {"generations", g.attempts}};
}

}  // namespace

void AddNodeProgress(const NodeStatus& node, json& out) {
  if (node.compute_ms.empty()) return;
  json compute = json::array();
  for (const std::optional<double>& ms : node.compute_ms) {
    compute.push_back(ms ? json(*ms) : json(nullptr));
  }
  out["compute_ms"] = std::move(compute);
  out["slow_ranks"] = node.slow_ranks;
}

void AddRunProgress(const RunStatus& run, json& out) {
  if (run.goodput) out["goodput"] = GoodputJson(*run.goodput);
  // Only a run whose workers report compute times can have slow ranks.
  if (!run.median_compute_ms && run.slow_ranks.empty()) return;
  if (run.median_compute_ms) out["median_compute_ms"] = *run.median_compute_ms;
  json slow = json::array();
  for (const SlowRank& rank : run.slow_ranks) {
    json s = {{"rank", rank.rank}, {"node_id", rank.node_id}, {"host", rank.host}};
    if (rank.compute_ms) s["compute_ms"] = *rank.compute_ms;
    slow.push_back(std::move(s));
  }
  out["slow_ranks"] = std::move(slow);
}

}  // namespace muster::rdzv
