// The member addresses the master is sent for its worker store's admission:
// what the rendezvous saw and what the agents advertised, to the master only.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "rendezvous/state/member_addresses.h"
#include "tests/unit/rdzv_state_test_support.h"

using namespace muster::rdzv;
using namespace muster::rdzv::testing;

namespace {

// Every string is moved in: GCC 12 at -O3 misreads assigning a short
// literal into a field here as an overlapping copy (-Wrestrict).
Join MemberJoin(std::string node, std::string store_addr) {
  Join j;
  j.run_id = std::string("r");
  j.node_id = std::move(node);
  j.host = std::string("h");
  j.min_nodes = 3;
  j.max_nodes = 3;
  j.store_addr = std::move(store_addr);
  j.store_port = 29500;
  return j;
}

}  // namespace

TEST_CASE("the member list keeps IP literals seen and advertised, sorted, once each",
          "[rdzv][member_addrs]") {
  CHECK(MemberAddressList({{"10.0.0.2", "10.0.0.2"},
                           {"10.0.0.1", "node1"},
                           {"", "fd00::3"},
                           {"::ffff:10.0.0.4", ""}}) ==
        std::vector<std::string>{"10.0.0.1", "10.0.0.2", "::ffff:10.0.0.4", "fd00::3"});
  CHECK(MemberAddressList({}).empty());
}

TEST_CASE("a member list that would not fit in a frame is left out", "[rdzv][member_addrs]") {
  std::vector<std::pair<std::string, std::string>> many;
  // Written out in full: 39 bytes each.
  for (int i = 0; i < 40'000; ++i) {
    char address[64];
    std::snprintf(address, sizeof address, "fd00:1111:2222:3333:4444:5555:6666:%04x", i);
    many.push_back({std::string(address), std::string()});
  }
  CHECK(MemberAddressList(many).empty());
  many.resize(10'000);
  CHECK(MemberAddressList(many).size() == 10'000);
}

TEST_CASE("only the master's assignment carries the generation's member addresses",
          "[rdzv][member_addrs]") {
  RendezvousCore core(TestSettings());
  core.Handle(MessageEvent{1, MemberJoin("a", ""), "10.0.0.1"}, muster::Time{});
  core.Handle(MessageEvent{2, MemberJoin("b", "10.0.0.2"), "10.0.0.2"}, muster::Time{});
  Actions actions =
      core.Handle(MessageEvent{3, MemberJoin("c", "192.168.1.3"), "10.0.0.3"}, muster::Time{});
  int assignments = 0;
  for (const Action& action : actions) {
    const auto* send = std::get_if<SendAction>(&action);
    if (send == nullptr) continue;
    const auto* assigned = std::get_if<AssignmentMessage>(&send->message);
    if (assigned == nullptr) continue;
    ++assignments;
    CAPTURE(assigned->assignment.group_rank);
    if (assigned->assignment.group_rank == 0) {
      CHECK(assigned->member_addrs ==
            std::vector<std::string>{"10.0.0.1", "10.0.0.2", "10.0.0.3", "192.168.1.3"});
    } else {
      CHECK(assigned->member_addrs.empty());
    }
  }
  CHECK(assignments == 3);
}
