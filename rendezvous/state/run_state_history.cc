// RunState, the history the status page shows (run_history.h): generations
// and why they formed, nodes that went, and the daemon's recent events.
#include <string>
#include <utility>

#include "rendezvous/state/run_state.h"

namespace muster::rdzv {
namespace {

// NodeTable's words for how a node died, as an operator reads them.
std::string DepartureReason(const std::string& why) {
  if (why == "disconnected") return "connection lost";
  if (why == "silent") return "heartbeat timeout";
  return why;
}

}  // namespace

void RunState::NoteEvent(Time now, std::string kind, std::string node_id, std::string text) {
  if (!events_) return;
  events_->Add(DaemonEvent{now, std::move(kind), run_id_, std::move(node_id), std::move(text)});
}

void RunState::NoteDeparted(const Node& node, const std::string& why, Time now) {
  const bool left = why == "left";
  DepartedNode departed{.node_id = node.node_id,
                        .host = node.host,
                        .state = left ? "left" : "dead",
                        .why = DepartureReason(why),
                        .at = now,
                        .last_seen = node.last_seen,
                        .generation = generation_,
                        .was_member = node.member,
                        .group_rank = node.member ? node.group_rank : -1,
                        .global_rank_offset = node.global_rank_offset,
                        .local_world_size = node.local_world_size};
  NoteEvent(now, left ? "node_left" : "node_dead", node.node_id,
            "host " + node.host + ": " + departed.why +
                (node.member ? " (group rank " + std::to_string(node.group_rank) + ")" : ""));
  history_.departed.Add(std::move(departed));
}

void RunState::NoteGeneration(Time now, GenerationCause cause) {
  std::string text = "generation " + std::to_string(generation_) + " of " +
                     std::to_string(summary_.group_world_size) + " nodes: " + cause.reason;
  if (!cause.node_id.empty()) text += " (" + cause.node_id + ")";
  NoteEvent(now, "generation", "", std::move(text));
  history_.generations.Add(GenerationRecord{generation_, now, summary_.group_world_size,
                                            summary_.world_size, std::move(cause), std::nullopt});
}

void RunState::AddHistory(RunStatus& run, Time now) const {
  const auto age = [now](Time at) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(now - at);
  };
  for (const GenerationRecord& g : history_.generations) {
    run.generations.push_back({g.generation, age(g.formed), g.nodes, g.world_size, g.cause.reason,
                               g.cause.node_id, g.cause.detail, g.stood_still});
  }
  for (const DepartedNode& d : history_.departed) {
    RunStatus::Departed& gone = run.departed.emplace_back();
    gone.node.node_id = d.node_id;
    gone.node.host = d.host;
    gone.node.member = d.was_member;
    gone.node.local_world_size = d.local_world_size;
    gone.node.group_rank = d.group_rank;
    gone.node.global_rank_offset = d.global_rank_offset;
    gone.node.heartbeat_age = age(d.last_seen);
    gone.state = d.state;
    gone.why = d.why;
    gone.age = age(d.at);
    gone.generation = d.generation;
  }
}

}  // namespace muster::rdzv
