// StatusPageJson: the document the status page (status_page.html) is drawn
// from, served at /status.json. Unlike StatusJson (what `muster status`
// reads), it pages each run's node table and lists the most interesting
// nodes first, so a run of 10,000 nodes answers in a few tens of KB:
//
//   {"events":[{"age_ms":1200,"kind":"node_dead","node_id":"n1","run_id":"job",
//               "text":"host h1: connection lost (group rank 1)"}, ...],  (oldest first)
//    "replica":{"epoch":2,"leader":"h:1","role":"leader","self":"h:1","standbys":[...]},
//    "runs":[{"run_id":"job","state":"running","generation":2,"world_size":16,
//             "min_nodes":2,"max_nodes":3,"restart_count":0,"max_restarts":3,
//             "counts":{"dead":1,"left":0,"member":2,"straggler":0,"waiting":0},
//             "generations":[{"generation":1,"age_ms":9000,"nodes":3,"world_size":24,
//                             "reason":"joined","node_id":"","detail":"max nodes joined"}, ...],
//             "nodes":{"total":3,"offset":0,"limit":100,
//                      "rows":[{"node_id":"n1","host":"h1","state":"dead",
//                               "why":"connection lost","age_ms":1200,...}, ...]}}]}
//
// A row's state is "dead" or "left" (gone from the run: with why and age_ms
// since), "straggler", "member" or "waiting". Members, and the departed that
// were members, carry group_rank and global_ranks [first, last]; a row has
// steps_per_second only when the node reports steps, and a run
// median_steps_per_second only when one of its members does. The progress
// fields (compute_ms and slow_ranks of a member row; median_compute_ms,
// slow_ranks and goodput of a run) are progress_json.h's; a generation has
// stood_still_ms once its members all stepped. "replica" is present
// for a replica only. Keys in byte order. Pure; never throws except
// std::bad_alloc.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "rendezvous/state/status_snapshot.h"

namespace muster::rdzv {

// What /status.json?run=R&offset=O&limit=L asks for. Without run, every run
// gets the same page of its table.
struct StatusPageQuery {
  static constexpr size_t kDefaultLimit = 100;
  static constexpr size_t kMaxLimit = 1000;
  std::string run;  // empty: every run
  size_t offset = 0;
  size_t limit = kDefaultLimit;  // 1..kMaxLimit
};

// The query string after '?' (percent-encoded, as a browser sends it). A
// missing, malformed or out-of-range value takes its default (limit is
// clamped to 1..kMaxLimit); unknown keys are ignored.
StatusPageQuery ParseStatusPageQuery(std::string_view query);

// One row of a run's node table: a node of the run, or one that departed.
// It points into the RunStatus it was made from, which must outlive it.
struct NodeRow {
  const NodeStatus* node = nullptr;
  std::string_view state;            // "dead", "left", "straggler", "member", "waiting"
  std::string_view why;              // departed only
  std::chrono::milliseconds age{0};  // departed only: since it went
};

// Every row of `run`, the most interesting first: dead nodes (the latest
// first), nodes that left, stragglers, then members by step rate (slowest
// first; those without step reports after), by group rank, and waiting
// nodes by node id. Copies no node: at 10,000 nodes it runs at every poll.
std::vector<NodeRow> NodeRowsByInterest(const RunStatus& run);

// How many rows of each state `rows` holds.
struct NodeCounts {
  size_t member = 0;  // stragglers included: they are members too
  size_t waiting = 0;
  size_t dead = 0;
  size_t left = 0;
  size_t straggler = 0;
};
NodeCounts CountNodes(const std::vector<NodeRow>& rows);

std::string StatusPageJson(const StatusSnapshot& snapshot, const StatusPageQuery& query);

}  // namespace muster::rdzv
