// RunState, the status snapshot: what `muster status` shows of one run.
#include <algorithm>
#include <vector>

#include "rendezvous/state/run_state.h"

namespace muster::rdzv {

RunStatus RunState::Status(Time now) const {
  RunStatus run;
  run.run_id = run_id_;
  run.phase = phase_;
  run.generation = generation_;
  run.min_nodes = min_nodes_;
  run.max_nodes = max_nodes_;
  run.restart_count = restart_count_;
  run.max_restarts = max_restarts_;
  if (phase_ == Phase::kEnded) run.outcome = RunStatus::Outcome{end_succeeded_, end_message_};
  AddHistory(run, now);

  // Members by group rank, then the others by node id: a stable, readable order.
  std::vector<const Node*> ordered;
  for (const auto& [id, node] : nodes_) ordered.push_back(&node);
  std::sort(ordered.begin(), ordered.end(), [](const Node* a, const Node* b) {
    if (a->member != b->member) return a->member;
    if (a->member) return a->group_rank < b->group_rank;
    return a->node_id < b->node_id;
  });
  run.nodes.reserve(ordered.size());
  std::vector<double> rates;  // the members' known step rates
  for (const Node* node : ordered) {
    NodeStatus& status = run.nodes.emplace_back();
    status.node_id = node->node_id;
    status.host = node->host;
    status.member = node->member;
    status.connected = node->conn != 0;
    status.local_world_size = node->local_world_size;
    status.heartbeat_age =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - node->last_seen);
    if (node->member) {
      status.group_rank = node->group_rank;
      status.global_rank_offset = node->global_rank_offset;
      status.steps_per_second = node->step_rate.PerSecond();
      status.straggler = stragglers_.IsStraggler(node->node_id);
      if (status.steps_per_second) rates.push_back(*status.steps_per_second);
      for (size_t i = 0; i < node->compute_ms.size(); ++i) {
        const double ms = node->compute_ms[i];
        status.compute_ms.push_back(ms > 0 ? std::optional<double>(ms) : std::nullopt);
        const int rank = node->global_rank_offset + static_cast<int>(i);
        if (!compute_stragglers_.IsFlagged(rank)) continue;
        status.slow_ranks.push_back(rank);
        run.slow_ranks.push_back(
            SlowRank{rank, node->node_id, node->host, status.compute_ms.back()});
      }
      // A node is a straggler by its step rate or by a slow rank of its own.
      status.straggler = status.straggler || !status.slow_ranks.empty();
      if (status.straggler) ++run.stragglers;
    }
  }
  run.median_steps_per_second = MedianRate(rates);
  run.median_compute_ms = compute_stragglers_.median_ms();
  std::sort(run.slow_ranks.begin(), run.slow_ranks.end(),
            [](const SlowRank& a, const SlowRank& b) { return a.rank < b.rank; });
  run.goodput = phase_ == Phase::kEnded ? final_goodput_ : goodput_.Peek(now);
  return run;
}

}  // namespace muster::rdzv
