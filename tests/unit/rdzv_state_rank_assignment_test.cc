// Rank assignment (rendezvous/state/rank_assignment.h) as a table: one case
// per rule, each row a set of nodes and the members the next generation gets.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "rendezvous/state/rank_assignment.h"

namespace muster::rdzv {
namespace {

// A node of a row: its name and what AssignRanks reads.
struct Node {
  std::string name;
  RankCandidate candidate;
};

Node Member(std::string name, int old_group_rank, uint64_t join_seq, int local_world_size = 1) {
  return {std::move(name), RankCandidate{true, old_group_rank, join_seq, local_world_size}};
}
Node Newcomer(std::string name, uint64_t join_seq, int local_world_size = 1) {
  return {std::move(name), RankCandidate{false, -1, join_seq, local_world_size}};
}

// The members' names by group rank, and the assignment itself.
struct Outcome {
  std::vector<std::string> by_group_rank;
  RankAssignment assignment;
};

Outcome Assign(const std::vector<Node>& nodes, int max_nodes) {
  std::vector<RankCandidate> candidates;
  for (const Node& node : nodes) candidates.push_back(node.candidate);
  Outcome outcome{{}, AssignRanks(candidates, max_nodes)};
  for (const RankedMember& member : outcome.assignment.members) {
    outcome.by_group_rank.push_back(nodes.at(member.candidate).name);
  }
  return outcome;
}

using Names = std::vector<std::string>;

struct Row {
  const char* what;
  std::vector<Node> nodes;
  int max_nodes;
  Names expected;
};

void CheckRows(const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    INFO(row.what);
    CHECK(Assign(row.nodes, row.max_nodes).by_group_rank == row.expected);
  }
}

TEST_CASE("group ranks are contiguous from 0 in the order chosen") {
  const Outcome o = Assign({Newcomer("a", 4), Newcomer("b", 9), Newcomer("c", 1)}, 8);
  REQUIRE(o.assignment.members.size() == 3);
  for (size_t i = 0; i < o.assignment.members.size(); ++i) {
    CHECK(o.assignment.members[i].group_rank == static_cast<int>(i));
  }
}

TEST_CASE("global ranks are contiguous: offsets are prefix sums of local world sizes") {
  const Outcome o = Assign({Newcomer("a", 0, 8), Newcomer("b", 1, 2), Newcomer("c", 2, 4)}, 8);
  REQUIRE(o.by_group_rank == Names{"a", "b", "c"});
  CHECK(o.assignment.members[0].global_rank_offset == 0);
  CHECK(o.assignment.members[1].global_rank_offset == 8);
  CHECK(o.assignment.members[2].global_rank_offset == 10);
  CHECK(o.assignment.world_size == 14);
}

TEST_CASE("survivors keep their relative order across rounds") {
  CheckRows({
      {"nobody died",
       {Member("a", 0, 0), Member("b", 1, 1), Member("c", 2, 2)},
       8,
       {"a", "b", "c"}},
      {"a middle rank died", {Member("a", 0, 0), Member("c", 2, 2)}, 8, {"a", "c"}},
      {"old ranks win over join order",
       {Member("late", 0, 7), Member("early", 1, 0)},
       8,
       {"late", "early"}},
      {"the order the table lists nodes in does not matter",
       {Member("c", 2, 2), Member("a", 0, 0), Member("b", 1, 1)},
       8,
       {"a", "b", "c"}},
  });
}

TEST_CASE("newcomers follow the survivors, in join order") {
  CheckRows({
      {"first round: join order", {Newcomer("b", 1), Newcomer("a", 0)}, 8, {"a", "b"}},
      {"after survivors, even ones that joined later",
       {Newcomer("n1", 0), Member("s", 0, 5), Newcomer("n2", 3)},
       8,
       {"s", "n1", "n2"}},
  });
}

TEST_CASE("the master is group rank 0: the lowest surviving rank, else the earliest joiner") {
  CheckRows({
      {"the master lives: it stays master", {Member("m", 0, 3), Member("x", 1, 0)}, 8, {"m", "x"}},
      {"the master died: the next survivor takes over",
       {Member("x", 2, 0), Member("y", 1, 4), Newcomer("z", 1)},
       8,
       {"y", "x", "z"}},
      {"no survivor: the earliest joiner", {Newcomer("b", 5), Newcomer("a", 2)}, 8, {"a", "b"}},
  });
}

TEST_CASE("at most max_nodes become members, the last in order stand by") {
  CheckRows({
      {"newcomers beyond max wait",
       {Member("a", 0, 0), Member("b", 1, 1), Newcomer("c", 2)},
       2,
       {"a", "b"}},
      {"the latest joiners wait",
       {Newcomer("a", 0), Newcomer("b", 1), Newcomer("c", 2)},
       2,
       {"a", "b"}},
      {"exactly max: nobody waits", {Newcomer("a", 0), Newcomer("b", 1)}, 2, {"a", "b"}},
  });
  const Outcome o = Assign({Newcomer("a", 0, 4), Newcomer("b", 1, 4)}, 1);
  CHECK(o.assignment.world_size == 4);  // only members count
}

TEST_CASE("no candidate, or max_nodes 0, gives an empty generation") {
  CHECK(Assign({}, 4).assignment.members.empty());
  CHECK(Assign({}, 4).assignment.world_size == 0);
  CHECK(Assign({Newcomer("a", 0)}, 0).assignment.members.empty());
}

TEST_CASE("two survivors claiming one old rank are ordered by join order") {
  CheckRows({
      {"a duplicate rank", {Member("b", 0, 1), Member("a", 0, 0)}, 8, {"a", "b"}},
  });
}

}  // namespace
}  // namespace muster::rdzv
