#include "rendezvous/daemon/run_metrics.h"

#include <fmt/format.h>

#include <array>
#include <functional>
#include <optional>

namespace muster::rdzv {
namespace {

struct Family {
  const char* name;
  const char* help;
};

struct RunNodeCounts {
  int member = 0;
  int waiting = 0;
  int dead = 0;
  int left = 0;
};

RunNodeCounts CountNodes(const RunStatus& run) {
  RunNodeCounts counts;
  for (const NodeStatus& node : run.nodes) {
    if (node.member) {
      ++counts.member;
    } else {
      ++counts.waiting;
    }
  }
  for (const RunStatus::Departed& gone : run.departed) {
    if (gone.state == "dead") {
      ++counts.dead;
    } else {
      ++counts.left;
    }
  }
  return counts;
}

int WorldSize(const RunStatus& run) {
  int size = 0;
  for (const NodeStatus& node : run.nodes) {
    if (node.member) size += node.local_world_size;
  }
  return size;
}

void Header(const Family& family, std::string& out) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} gauge\n", family.name,
                 family.help, family.name);
}

// One family: its header, then `each(run)` for every run.
void PerRun(const StatusSnapshot& snapshot, const Family& family, std::string& out,
            const std::function<void(const RunStatus&, const std::string& run_label)>& each) {
  Header(family, out);
  for (const RunStatus& run : snapshot.runs) {
    each(run, "run=\"" + PrometheusLabelValue(run.run_id) + "\"");
  }
}

void Sample(std::string& out, const char* name, const std::string& labels, double value) {
  fmt::format_to(std::back_inserter(out), "{}{{{}}} {}\n", name, labels, value);
}

}  // namespace

std::string PrometheusLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void AppendRunMetrics(const StatusSnapshot& snapshot, const RunMetricsOptions& options,
                      std::string& out) {
  constexpr Family kState{"muster_run_state", "The run's phase (1 for the current one)."};
  PerRun(snapshot, kState, out, [&](const RunStatus& run, const std::string& labels) {
    Sample(out, kState.name, labels + ",state=\"" + std::string(RunPhaseName(run.phase)) + "\"", 1);
  });
  constexpr Family kGeneration{"muster_run_generation",
                               "The run's current generation (0 before the first)."};
  PerRun(snapshot, kGeneration, out, [&](const RunStatus& run, const std::string& labels) {
    Sample(out, kGeneration.name, labels, static_cast<double>(run.generation));
  });
  constexpr Family kWorldSize{"muster_run_world_size", "Workers in the current generation."};
  PerRun(snapshot, kWorldSize, out, [&](const RunStatus& run, const std::string& labels) {
    Sample(out, kWorldSize.name, labels, WorldSize(run));
  });
  constexpr Family kNodes{
      "muster_run_nodes",
      "The run's nodes by state: member of the generation, waiting, or gone (dead, left; the "
      "last 256 kept)."};
  PerRun(snapshot, kNodes, out, [&](const RunStatus& run, const std::string& labels) {
    const RunNodeCounts counts = CountNodes(run);
    Sample(out, kNodes.name, labels + ",state=\"member\"", counts.member);
    Sample(out, kNodes.name, labels + ",state=\"waiting\"", counts.waiting);
    Sample(out, kNodes.name, labels + ",state=\"dead\"", counts.dead);
    Sample(out, kNodes.name, labels + ",state=\"left\"", counts.left);
  });
  constexpr Family kRestarts{"muster_run_restarts", "Job-wide restarts used."};
  PerRun(snapshot, kRestarts, out, [&](const RunStatus& run, const std::string& labels) {
    Sample(out, kRestarts.name, labels, run.restart_count);
  });
  constexpr Family kBudget{"muster_run_restart_budget",
                           "Job-wide restarts allowed (max_restarts)."};
  PerRun(snapshot, kBudget, out, [&](const RunStatus& run, const std::string& labels) {
    Sample(out, kBudget.name, labels, run.max_restarts);
  });

  constexpr Family kSince{"muster_run_seconds_since_generation",
                          "Seconds since the current generation formed (absent before the first)."};
  PerRun(snapshot, kSince, out, [&](const RunStatus& run, const std::string& labels) {
    if (run.generations.empty() || run.generations.back().generation != run.generation) return;
    Sample(out, kSince.name, labels,
           static_cast<double>(run.generations.back().age.count()) / 1000.0);
  });
  constexpr Family kSteps{"muster_run_steps_per_second",
                          "The median of the members' step rates (absent without step reports)."};
  PerRun(snapshot, kSteps, out, [&](const RunStatus& run, const std::string& labels) {
    if (run.median_steps_per_second) Sample(out, kSteps.name, labels, *run.median_steps_per_second);
  });
  constexpr Family kStragglers{"muster_run_stragglers", "Members flagged as stragglers."};
  PerRun(snapshot, kStragglers, out, [&](const RunStatus& run, const std::string& labels) {
    Sample(out, kStragglers.name, labels, run.stragglers);
  });
  constexpr Family kSlowRanks{"muster_run_slow_ranks",
                              "Ranks flagged slow by their own compute time per step."};
  PerRun(snapshot, kSlowRanks, out, [&](const RunStatus& run, const std::string& labels) {
    Sample(out, kSlowRanks.name, labels, static_cast<double>(run.slow_ranks.size()));
  });
  constexpr Family kCompute{"muster_run_compute_ms",
                            "The median of the ranks' own compute time per step, in ms (absent "
                            "without reports)."};
  PerRun(snapshot, kCompute, out, [&](const RunStatus& run, const std::string& labels) {
    if (run.median_compute_ms) Sample(out, kCompute.name, labels, *run.median_compute_ms);
  });
  constexpr Family kGoodput{"muster_run_goodput_ratio",
                            "The fraction of the run's wall time in which every member was "
                            "stepping (absent without step reports)."};
  PerRun(snapshot, kGoodput, out, [&](const RunStatus& run, const std::string& labels) {
    if (run.goodput) Sample(out, kGoodput.name, labels, run.goodput->ratio());
  });

  if (options.node_series_max_nodes <= 0) return;
  // One family per node value; runs past the limit add nothing.
  auto per_node = [&](const Family& family,
                      const std::function<std::optional<double>(const NodeStatus&)>& value) {
    PerRun(snapshot, family, out, [&](const RunStatus& run, const std::string& labels) {
      if (static_cast<int>(run.nodes.size()) > options.node_series_max_nodes) return;
      for (const NodeStatus& node : run.nodes) {
        const std::optional<double> v = value(node);
        if (!v) continue;
        Sample(out, family.name,
               labels + ",node=\"" + PrometheusLabelValue(node.node_id) + "\",host=\"" +
                   PrometheusLabelValue(node.host) + "\"",
               *v);
      }
    });
  };
  per_node({"muster_node_heartbeat_age_seconds",
            "Seconds since the node was last heard (runs within the node-series limit only)."},
           [](const NodeStatus& node) -> std::optional<double> {
             return static_cast<double>(node.heartbeat_age.count()) / 1000.0;
           });
  per_node({"muster_node_steps_per_second",
            "The node's step rate (runs within the node-series limit; absent without reports)."},
           [](const NodeStatus& node) { return node.steps_per_second; });
  per_node({"muster_node_straggler",
            "1 while the node is flagged a straggler (runs within the node-series limit)."},
           [](const NodeStatus& node) -> std::optional<double> { return node.straggler ? 1 : 0; });
}

}  // namespace muster::rdzv
