// The agent's own counters in Prometheus' text format, as its health
// endpoint serves them at /metrics (--health-port). Pure: the agent gathers
// the values, this writes them. Tests: tests/unit/launcher_agent_metrics_test.cc.
//
// Series (no labels: one agent per scrape target):
//   muster_store_refused_total   counter  connections the worker store this agent hosts refused
//                                         (store_server.h; 0 on nodes that host none)
//   muster_agent_healthy         gauge    1 while the health endpoint answers 200, else 0
//   muster_agent_attempt         gauge    the attempt of the workers here
//   (TORCHELASTIC_RESTART_COUNT) muster_agent_generation      gauge    the generation this node
//   runs in (elastic runs only;
//                                         0 before the first)
//   muster_agent_rendezvous_silence_seconds
//                                gauge    since the rendezvous last answered (elastic runs,
//                                         once it first answered)
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace muster {

struct AgentCounters {
  uint64_t store_refused = 0;
  bool healthy = true;
  int attempt = 0;
  std::optional<uint64_t> generation;  // nullopt: a static run
  std::optional<double> rendezvous_silence_s;
};

std::string AgentMetricsText(const AgentCounters& counters);

}  // namespace muster
