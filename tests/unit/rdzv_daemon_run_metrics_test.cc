// The per-run /metrics families: label values escaped as the text format
// says, every family's header present without runs, per-node series only
// for runs within the limit.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <string>

#include "rendezvous/daemon/run_metrics.h"

namespace muster::rdzv {
namespace {

RunStatus Run(const std::string& id, int members, int waiting) {
  RunStatus run;
  run.run_id = id;
  run.phase = RunPhase::kRunning;
  run.generation = 2;
  for (int i = 0; i < members + waiting; ++i) {
    NodeStatus node;
    // fmt, not operator+ on a literal: GCC 12 at -O3 reads that as an
    // overlapping copy (-Wrestrict).
    node.node_id = fmt::format("{}-n{}", id, i);
    node.host = fmt::format("h{}", i);
    node.member = i < members;
    node.local_world_size = 8;
    run.nodes.push_back(node);
  }
  return run;
}

TEST_CASE("label values escape backslash, quote and newline", "[rdzv][metrics]") {
  CHECK(PrometheusLabelValue("plain-run_1") == "plain-run_1");
  CHECK(PrometheusLabelValue("a\\b\"c\nd") == "a\\\\b\\\"c\\nd");
}

TEST_CASE("every family has its header even with no run", "[rdzv][metrics]") {
  std::string out;
  AppendRunMetrics(StatusSnapshot{}, RunMetricsOptions{}, out);
  for (const char* family :
       {"muster_run_state", "muster_run_generation", "muster_run_world_size", "muster_run_nodes",
        "muster_run_restarts", "muster_run_restart_budget"}) {
    CHECK(out.find(std::string("# TYPE ") + family + " gauge\n") != std::string::npos);
  }
  CHECK(out.find("muster_node_") == std::string::npos);
}

TEST_CASE("runs are labelled, and per-node series come only within the limit", "[rdzv][metrics]") {
  StatusSnapshot snapshot;
  snapshot.runs = {Run("big", 3, 1), Run("small", 2, 0)};
  std::string out;
  AppendRunMetrics(snapshot, RunMetricsOptions{2}, out);
  CHECK(out.find("muster_run_world_size{run=\"big\"} 24\n") != std::string::npos);
  CHECK(out.find("muster_run_nodes{run=\"big\",state=\"waiting\"} 1\n") != std::string::npos);
  CHECK(out.find("muster_run_state{run=\"small\",state=\"running\"} 1\n") != std::string::npos);
  CHECK(
      out.find("muster_node_heartbeat_age_seconds{run=\"small\",node=\"small-n0\",host=\"h0\"}") !=
      std::string::npos);
  CHECK(out.find("node=\"big-n0\"") == std::string::npos);
  CHECK(out.find("muster_run_seconds_since_generation{run=\"big\"}") == std::string::npos);
  CHECK(out.find("muster_run_steps_per_second{run=\"big\"}") == std::string::npos);
}

TEST_CASE("gone nodes, the current generation's age and step rates are counted per run",
          "[rdzv][metrics]") {
  StatusSnapshot snapshot;
  snapshot.runs = {Run("job", 2, 0)};
  RunStatus& run = snapshot.runs[0];
  run.generations.push_back(
      {1, std::chrono::milliseconds(9000), 3, 3, "joined", "", "", std::nullopt});
  run.generations.push_back(
      {2, std::chrono::milliseconds(1500), 2, 2, "node lost", "n2", "", std::nullopt});
  RunStatus::Departed dead;
  dead.state = "dead";
  RunStatus::Departed left;
  left.state = "left";
  run.departed = {dead, dead, left};
  run.median_steps_per_second = 12.5;
  run.stragglers = 1;
  std::string out;
  AppendRunMetrics(snapshot, RunMetricsOptions{}, out);
  CHECK(out.find("muster_run_nodes{run=\"job\",state=\"dead\"} 2\n") != std::string::npos);
  CHECK(out.find("muster_run_nodes{run=\"job\",state=\"left\"} 1\n") != std::string::npos);
  CHECK(out.find("muster_run_seconds_since_generation{run=\"job\"} 1.5\n") != std::string::npos);
  CHECK(out.find("muster_run_steps_per_second{run=\"job\"} 12.5\n") != std::string::npos);
  CHECK(out.find("muster_run_stragglers{run=\"job\"} 1\n") != std::string::npos);
  // Without compute times or steps: no compute median and no goodput.
  CHECK(out.find("muster_run_compute_ms{") == std::string::npos);
  CHECK(out.find("muster_run_goodput_ratio{") == std::string::npos);
  CHECK(out.find("muster_run_slow_ranks{run=\"job\"} 0\n") != std::string::npos);

  run.median_compute_ms = 20.5;
  run.slow_ranks = {SlowRank{3, "n2", "h2", 41.0}};
  Goodput goodput;
  goodput.wall = std::chrono::milliseconds(10'000);
  goodput.productive = std::chrono::milliseconds(9'000);
  run.goodput = goodput;
  out.clear();
  AppendRunMetrics(snapshot, RunMetricsOptions{}, out);
  CHECK(out.find("muster_run_compute_ms{run=\"job\"} 20.5\n") != std::string::npos);
  CHECK(out.find("muster_run_slow_ranks{run=\"job\"} 1\n") != std::string::npos);
  CHECK(out.find("muster_run_goodput_ratio{run=\"job\"} 0.9\n") != std::string::npos);
  CHECK(out.find("# TYPE muster_run_goodput_ratio gauge\n") != std::string::npos);
}

}  // namespace
}  // namespace muster::rdzv
