// AssignRanks: who gets which rank when a new generation starts. A pure
// function of the run's nodes, so every rule below is a row of a table test
// (tests/unit/rdzv_state_rank_assignment_test.cc):
//
//   - Members of the ending generation keep their relative order (by their
//     old group rank) and come first; newcomers follow in join order.
//   - At most `max_nodes` become members; the rest (the last in that order)
//     stand by.
//   - Group ranks are contiguous, 0..N-1, in that order.
//   - Global ranks are contiguous too: each member's global_rank_offset is the
//     sum of local_world_size over the members before it, and world_size the
//     sum over all.
//   - Group rank 0 is the master (its agent's store is MASTER_ADDR:PORT): the
//     surviving member with the lowest old group rank, so the master stays
//     while it lives; the earliest joiner when no member survives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace muster::rdzv {

// A node of the run, as rank assignment sees it.
struct RankCandidate {
  bool previous_member = false;  // a member of the generation that ends
  int previous_group_rank = -1;  // its group rank there (previous members only)
  uint64_t join_seq = 0;         // when it joined the run: smaller is earlier
  int local_world_size = 1;      // how many workers it runs
};

// One member of the new generation.
struct RankedMember {
  size_t candidate = 0;  // index into the candidates given
  int group_rank = 0;
  int global_rank_offset = 0;
};

struct RankAssignment {
  std::vector<RankedMember> members;  // by group rank; members[0] is the master
  int world_size = 0;                 // the number of global ranks
};

// The members of the next generation, chosen from `candidates` (in any
// order; the result does not depend on it) by the rules above. Candidates
// not among the members stand by. Ties (two previous members with one old
// group rank, which a consistent run never has) go by join order.
// REQUIRES: max_nodes >= 0.
RankAssignment AssignRanks(const std::vector<RankCandidate>& candidates, int max_nodes);

}  // namespace muster::rdzv
