#include "rendezvous/state/rank_assignment.h"

#include <algorithm>
#include <tuple>

namespace muster::rdzv {

RankAssignment AssignRanks(const std::vector<RankCandidate>& candidates, int max_nodes) {
  std::vector<size_t> order(candidates.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Survivors first, so no surviving worker sees its rank move behind a
  // newcomer's; join_seq settles everything else, and is unique per node.
  auto key = [&candidates](size_t i) {
    const RankCandidate& c = candidates[i];
    return std::make_tuple(!c.previous_member, c.previous_member ? c.previous_group_rank : 0,
                           c.join_seq);
  };
  std::sort(order.begin(), order.end(), [&key](size_t a, size_t b) { return key(a) < key(b); });
  if (order.size() > static_cast<size_t>(max_nodes)) order.resize(static_cast<size_t>(max_nodes));

  RankAssignment result;
  result.members.reserve(order.size());
  for (size_t rank = 0; rank < order.size(); ++rank) {
    result.members.push_back(RankedMember{order[rank], static_cast<int>(rank), result.world_size});
    result.world_size += candidates[order[rank]].local_world_size;
  }
  return result;
}

}  // namespace muster::rdzv
