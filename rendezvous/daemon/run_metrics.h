// The per-run families of musterd's /metrics, in the Prometheus text format
// (version 0.0.4), formatted from a StatusSnapshot. Every series carries a
// `run` label; the set of series is bounded by the runs the daemon holds,
// not by their nodes:
//
//   muster_run_state{run,state} 1                   state: RunPhaseName
//   muster_run_generation{run}                      0 before the first
//   muster_run_world_size{run}                      workers in the generation
//   muster_run_nodes{run,state}                     state: member, waiting, and the
//                                                   nodes gone that the run's history
//                                                   keeps (run_history.h): dead, left
//   muster_run_seconds_since_generation{run}        absent before the first
//   muster_run_restarts{run}, muster_run_restart_budget{run}
//   muster_run_steps_per_second{run}                the members' median; absent
//                                                   without step reports
//   muster_run_stragglers{run}                      members flagged stragglers
//
// Per-node series (muster_node_{heartbeat_age_seconds,steps_per_second,
// straggler}{run,node,host}) come only for runs of at
// most `node_series_max_nodes` nodes (0, the default: none), for small jobs
// whose operators want them.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "rendezvous/state/status_snapshot.h"

namespace muster::rdzv {

struct RunMetricsOptions {
  int node_series_max_nodes = 0;
};

// Appends the families above (HELP and TYPE once each, also when no run
// exists, so dashboards find every name) to `out`.
void AppendRunMetrics(const StatusSnapshot& snapshot, const RunMetricsOptions& options,
                      std::string& out);

// `value` as a label value: backslash, double quote and newline escaped.
std::string PrometheusLabelValue(std::string_view value);

}  // namespace muster::rdzv
