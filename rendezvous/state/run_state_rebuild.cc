// RunState, rebuilding after a daemon restart: agents that still run workers
// join with the assignment they run under (Join.current), and the run carries
// on with that generation when every member is back, without restarting a
// worker (PROTOCOL.md, "Daemon restart and self-fencing").
#include <algorithm>
#include <vector>

#include "rendezvous/state/run_state.h"

namespace muster::rdzv {
namespace {

// Whether the reports of one generation are all of it: as many as its
// group_world_size, and each group rank once. Judged by the first report's
// group_world_size; an empty list is no generation.
bool IsWholeGeneration(const std::vector<RunNode*>& reporters) {
  if (reporters.empty()) return false;
  const int size = reporters.front()->reported->group_world_size;
  if (static_cast<int>(reporters.size()) != size) return false;
  std::vector<bool> seen(static_cast<size_t>(size), false);  // size == reporters.size() >= 1
  for (const RunNode* node : reporters) {
    const int rank = node->reported->group_rank;
    if (rank < 0 || rank >= size || seen[static_cast<size_t>(rank)]) return false;
    seen[static_cast<size_t>(rank)] = true;
  }
  return true;
}

}  // namespace

void RunState::StartRebuild(Time now) {
  phase_ = Phase::kRebuilding;
  // Until close_timeout, a missing member may still come back. After a
  // takeover, until the hold: an agent that has not come back by then has
  // fenced itself, and one that has not fenced may still come back.
  round_deadline_ = rebuild_hold_until_ && *rebuild_hold_until_ > now
                        ? *rebuild_hold_until_
                        : now + settings_.close_timeout;
}

void RunState::TryFinishRebuild(Time now, bool deadline_passed, Actions& out) {
  uint64_t latest = 0;
  for (const auto& [id, node] : nodes_) {
    if (node.reported) latest = std::max(latest, node.reported->generation);
  }
  std::vector<Node*> reporters;
  for (auto& [id, node] : nodes_) {
    if (node.reported && node.reported->generation == latest) reporters.push_back(&node);
  }
  // Generations never go backwards, even across a daemon restart.
  generation_ = std::max(generation_, latest);
  if (IsWholeGeneration(reporters)) {
    // Every member of the last generation is back with the same view: carry
    // on with it, and no worker restarts.
    AdoptReporters(reporters);
    for (Node* n : reporters) n->reported.reset();
    phase_ = Phase::kRunning;
    round_deadline_.reset();
    Log(out, false,
        "event=rebuilt gen=" + std::to_string(generation_) +
            " nodes=" + std::to_string(reporters.size()));
    SummarizeGeneration();
    NoteGeneration(now, GenerationCause{std::string(GenerationCause::kDaemonRestart), "",
                                        "every member came back; no worker restarted"});
    for (Node* n : reporters) SendAssignment(*n, out);
    if (static_cast<int>(nodes_.size()) > static_cast<int>(reporters.size()) &&
        static_cast<int>(reporters.size()) < max_nodes_) {
      round_deadline_ = now + settings_.last_call_timeout;  // admit the newcomers
    }
    return;
  }
  if (!deadline_passed) return;
  // Someone did not come back in time: the reporters keep their order, and a
  // new generation starts without the missing nodes.
  AdoptReporters(reporters);
  round_opened_ = now;
  if (static_cast<int>(nodes_.size()) >= min_nodes_) {
    next_cause_ = GenerationCause{std::string(GenerationCause::kDaemonRestart), "",
                                  "members missing after the rebuild"};
    StartGeneration(now, "rebuild after daemon restart found missing nodes", out);
    return;
  }
  phase_ = Phase::kGathering;
  gathering_since_ = now;
  round_deadline_.reset();
  WaitForReplacements("below --nnodes MIN after rebuild", out);
}

void RunState::AdoptReporters(const std::vector<Node*>& reporters) {
  nodes_.ClearMembership();
  for (Node* n : reporters) {
    n->member = true;
    n->group_rank = n->reported->group_rank;
    n->global_rank_offset = n->reported->global_rank_offset;
    restart_count_ = std::max(restart_count_, n->reported->restart_count);
  }
}

}  // namespace muster::rdzv
