// status_page_cost: the in-process breakdown of status_page_scale.sh. What
// musterd does for one request to its status page, per phase, with N nodes
// in one run, without the network or the event loop around it:
//
//   status_page_cost [--nodes 10000] [--repeat 50]
//
// N simulated agents join one run (--nnodes N:N, the nodes and hosts named
// as rdzv_load names them) through RendezvousCore::Handle, so the round
// closes and every node is a member. Then each phase runs --repeat times and
// its median is printed, in ms, as one JSON line:
//   snapshot           RendezvousCore::Status: every node copied and sorted
//                      (what /status.json and /metrics both start with)
//   rows_by_interest   NodeRowsByInterest: the page's order, every node
//   page_json          StatusPageJson from a snapshot, limit 100 (the page)
//   page_json_1000     StatusPageJson from a snapshot, limit 1000
//   run_metrics        AppendRunMetrics from a snapshot (/metrics' run part)
//   status_json        snapshot + StatusPageJson, limit 100: a page's poll
// Exit status: 0; 1 when the round did not close; 2 on bad flags.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "rendezvous/daemon/run_metrics.h"
#include "rendezvous/daemon/status_page_json.h"
#include "rendezvous/state/rendezvous_core.h"

namespace {

using muster::rdzv::StatusSnapshot;

// The median of `repeat` timings of `phase`, in ms.
template <typename Phase>
double MedianMs(int repeat, Phase phase) {
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    phase();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int nodes = 10000;
  int repeat = 50;
  CLI::App app{"status_page_cost: the status page's work per request, per phase"};
  app.add_option("--nodes", nodes, "nodes in the run (default 10000)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--repeat", repeat, "timings per phase (default 50)")
      ->check(CLI::Range(1, 100000));
  CLI11_PARSE(app, argc, argv);

  muster::rdzv::RendezvousCore core{muster::rdzv::Settings{}};
  // The simulated clock: time does not matter here, only that it is one instant.
  const muster::Time now{};
  for (int i = 0; i < nodes; ++i) {
    muster::rdzv::Join join;
    join.run_id = "bench";
    join.node_id = "n" + std::to_string(i);
    join.host = "sim-" + std::to_string(i);
    join.local_world_size = 1;
    join.min_nodes = nodes;
    join.max_nodes = nodes;
    join.store_addr = "127.0.0.1";
    join.store_port = 10000 + i % 50000;
    core.Handle(muster::rdzv::MessageEvent{static_cast<muster::rdzv::ConnId>(i + 1), join}, now);
  }
  if (core.totals().nodes != static_cast<size_t>(nodes)) {
    std::cerr << "status_page_cost: the round did not close (" << core.totals().nodes
              << " members of " << nodes << ")\n";
    return 1;
  }

  StatusSnapshot snapshot = core.Status("", now);
  const muster::rdzv::StatusPageQuery page;
  muster::rdzv::StatusPageQuery page_1000;
  page_1000.limit = 1000;
  std::string out;
  nlohmann::json result = {{"nodes", nodes}, {"repeat", repeat}};
  result["snapshot"] = MedianMs(repeat, [&] { snapshot = core.Status("", now); });
  result["rows_by_interest"] = MedianMs(repeat, [&] {
    out.resize(muster::rdzv::NodeRowsByInterest(snapshot.runs.at(0)).size() % 2);
  });
  result["page_json"] =
      MedianMs(repeat, [&] { out = muster::rdzv::StatusPageJson(snapshot, page); });
  result["page_json_bytes"] = out.size();
  result["page_json_1000"] =
      MedianMs(repeat, [&] { out = muster::rdzv::StatusPageJson(snapshot, page_1000); });
  result["run_metrics"] = MedianMs(repeat, [&] {
    out.clear();
    muster::rdzv::AppendRunMetrics(snapshot, muster::rdzv::RunMetricsOptions{}, out);
  });
  result["status_json"] =
      MedianMs(repeat, [&] { out = muster::rdzv::StatusPageJson(core.Status("", now), page); });
  std::cout << result.dump() << std::endl;
  return 0;
}
