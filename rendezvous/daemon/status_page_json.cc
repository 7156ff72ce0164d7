#include "rendezvous/daemon/status_page_json.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "rendezvous/daemon/progress_json.h"
#include "rendezvous/daemon/replica_json.h"
#include "rendezvous/net/http_request.h"

namespace muster::rdzv {
namespace {

using nlohmann::json;

std::optional<size_t> ParseCount(std::string_view text) {
  size_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Lower is more interesting.
int StateOrder(std::string_view state) {
  if (state == "dead") return 0;
  if (state == "left") return 1;
  if (state == "straggler") return 2;
  if (state == "member") return 3;
  return 4;  // waiting
}

json RowJson(const NodeRow& row) {
  const NodeStatus& node = *row.node;
  json r = {
      {"node_id", node.node_id},
      {"host", node.host},
      {"state", std::string(row.state)},
      {"connected", node.connected},
      {"local_world_size", node.local_world_size},
      {"heartbeat_age_ms", node.heartbeat_age.count()},
  };
  if (node.member) {
    r["group_rank"] = node.group_rank;
    r["global_ranks"] = {node.global_rank_offset,
                         node.global_rank_offset + node.local_world_size - 1};
  }
  if (!row.why.empty()) {
    r["why"] = std::string(row.why);
    r["age_ms"] = row.age.count();
  }
  if (node.steps_per_second) r["steps_per_second"] = *node.steps_per_second;
  if (node.member) AddNodeProgress(node, r);
  return r;
}

json RunJson(const RunStatus& run, const StatusPageQuery& query) {
  const std::vector<NodeRow> rows = NodeRowsByInterest(run);
  const NodeCounts counts = CountNodes(rows);
  int world_size = 0;
  for (const NodeStatus& node : run.nodes) {
    if (node.member) world_size += node.local_world_size;
  }
  json page = json::array();
  const size_t first = std::min(query.offset, rows.size());
  const size_t last = std::min(rows.size(), first + query.limit);
  for (size_t i = first; i < last; ++i) page.push_back(RowJson(rows[i]));
  json generations = json::array();
  for (const RunStatus::Generation& g : run.generations) {
    generations.push_back({{"generation", g.generation},
                           {"age_ms", g.age.count()},
                           {"nodes", g.nodes},
                           {"world_size", g.world_size},
                           {"reason", g.reason},
                           {"node_id", g.node_id},
                           {"detail", g.detail}});
    if (g.stood_still) generations.back()["stood_still_ms"] = g.stood_still->count();
  }
  json r = {
      {"run_id", run.run_id},
      {"state", std::string(RunPhaseName(run.phase))},
      {"generation", run.generation},
      {"world_size", world_size},
      {"min_nodes", run.min_nodes},
      {"max_nodes", run.max_nodes},
      {"restart_count", run.restart_count},
      {"max_restarts", run.max_restarts},
      {"counts",
       {{"member", counts.member},
        {"waiting", counts.waiting},
        {"dead", counts.dead},
        {"left", counts.left},
        {"straggler", counts.straggler}}},
      {"generations", std::move(generations)},
      {"nodes",
       {{"total", rows.size()},
        {"offset", first},
        {"limit", query.limit},
        {"rows", std::move(page)}}},
  };
  if (run.median_steps_per_second) r["median_steps_per_second"] = *run.median_steps_per_second;
  AddRunProgress(run, r);
  if (run.outcome) {
    r["result"] = run.outcome->succeeded ? "succeeded" : "failed";
    r["message"] = run.outcome->message;
  }
  return r;
}

}  // namespace

StatusPageQuery ParseStatusPageQuery(std::string_view query) {
  StatusPageQuery parsed;
  parsed.run = HttpQueryValue(query, "run").value_or("");
  if (const auto offset = HttpQueryValue(query, "offset")) {
    parsed.offset = ParseCount(*offset).value_or(0);
  }
  if (const auto limit = HttpQueryValue(query, "limit"); limit && ParseCount(*limit)) {
    parsed.limit = std::clamp<size_t>(*ParseCount(*limit), 1, StatusPageQuery::kMaxLimit);
  }
  return parsed;
}

std::vector<NodeRow> NodeRowsByInterest(const RunStatus& run) {
  std::vector<NodeRow> rows;
  rows.reserve(run.nodes.size() + run.departed.size());
  for (const RunStatus::Departed& gone : run.departed) {
    rows.push_back(NodeRow{&gone.node, gone.state, gone.why, gone.age});
  }
  for (const NodeStatus& node : run.nodes) {
    const char* state = !node.member ? "waiting" : node.straggler ? "straggler" : "member";
    rows.push_back(NodeRow{&node, state, {}, {}});
  }
  // Ranks order members, and ids the rest, so equal rows keep a stable order.
  std::stable_sort(rows.begin(), rows.end(), [](const NodeRow& a, const NodeRow& b) {
    const int sa = StateOrder(a.state);
    const int sb = StateOrder(b.state);
    if (sa != sb) return sa < sb;
    if (sa <= 1) return a.age < b.age;  // the latest to go first
    const auto ra = a.node->steps_per_second;
    const auto rb = b.node->steps_per_second;
    if (ra.has_value() != rb.has_value()) return ra.has_value();
    if (ra && *ra != *rb) return *ra < *rb;
    if (a.node->member) return a.node->group_rank < b.node->group_rank;
    return a.node->node_id < b.node->node_id;
  });
  return rows;
}

NodeCounts CountNodes(const std::vector<NodeRow>& rows) {
  NodeCounts counts;
  for (const NodeRow& row : rows) {
    if (row.state == "dead") {
      ++counts.dead;
    } else if (row.state == "left") {
      ++counts.left;
    } else if (row.state == "waiting") {
      ++counts.waiting;
    } else {
      ++counts.member;
      if (row.state == "straggler") ++counts.straggler;
    }
  }
  return counts;
}

std::string StatusPageJson(const StatusSnapshot& snapshot, const StatusPageQuery& query) {
  json runs = json::array();
  for (const RunStatus& run : snapshot.runs) {
    if (!query.run.empty() && run.run_id != query.run) continue;
    runs.push_back(RunJson(run, query));
  }
  json events = json::array();
  for (const EventStatus& e : snapshot.events) {
    if (!query.run.empty() && !e.run_id.empty() && e.run_id != query.run) continue;
    events.push_back({{"age_ms", e.age.count()},
                      {"kind", e.kind},
                      {"run_id", e.run_id},
                      {"node_id", e.node_id},
                      {"text", e.text}});
  }
  json doc{{"runs", std::move(runs)}, {"events", std::move(events)}};
  if (const auto& r = snapshot.replica) {
    doc["replica"] = ReplicaJson(*r);
  }
  // As StatusJson: a string that is not UTF-8 is written with U+FFFD.
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace muster::rdzv
