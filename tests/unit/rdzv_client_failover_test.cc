// Failover of a replicated rendezvous, end to end on a hand-driven clock:
// real RendezvousCores as the replicas' leaders, real ClientMachines as the
// agents (FakeReplicas, rdzv_client_fake_replicas.h), in the scenarios the
// chaos suite has hit. FakeReplicas checks on every step that no agent's
// workers run behind a generation formed without it.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "tests/unit/rdzv_client_fake_replicas.h"

namespace muster::rdzv {
namespace {

using namespace std::chrono_literals;
using testing::FakeReplicas;
using State = ClientMachine::State;

// Three agents on generation 1, served by replica 0 (epoch 1).
void FormFirstGeneration(FakeReplicas& f, int agents) {
  f.RunFor(3s);
  REQUIRE(f.leader() == 0);
  for (int a = 0; a < agents; ++a) {
    INFO("node" << a << "\n" << f.transcript());
    REQUIRE(f.running(a) == 1u);
    REQUIRE(f.machine(a).state() == State::kServed);
  }
}

void CheckAllServedBy(const FakeReplicas& f, int agents, uint64_t epoch) {
  for (int a = 0; a < agents; ++a) {
    INFO("node" << a);
    CHECK(f.machine(a).state() == State::kServed);
    CHECK(f.machine(a).epoch() == epoch);
  }
}

// Every agent followed `leader` (epoch 2) with the workers of generation 1
// still running: none fenced, none restarted.
void CheckFollowedWithoutRestart(const FakeReplicas& f, int agents, int leader) {
  INFO(f.transcript());
  CHECK(f.leader() == leader);
  CHECK(f.epoch() == 2);
  CHECK(f.fences() == 0);
  CheckAllServedBy(f, agents, 2);
  for (int a = 0; a < agents; ++a) CHECK(f.running(a) == 1u);
  CHECK(f.newest_generation() == 1);  // rebuilt, not formed anew
}

TEST_CASE("a killed leader's agents follow the next one and keep their workers",
          "[rdzv][client][failover]") {
  FakeReplicas f(3, 3);
  FormFirstGeneration(f, 3);
  f.Kill(0);
  f.RunFor(8s);
  CheckFollowedWithoutRestart(f, 3, 1);
}

TEST_CASE("a cut-off leader's agents find the next one through the standbys in time",
          "[rdzv][client][failover]") {
  FakeReplicas f(3, 3);
  FormFirstGeneration(f, 3);
  f.Cut(0, true);  // its link: neither the agents nor etcd hear it
  f.RunFor(8s);
  CheckFollowedWithoutRestart(f, 3, 1);
}

TEST_CASE("a slow endpoint ahead of a healthy standby does not cost the workers",
          "[rdzv][client][failover]") {
  // Replica 1 accepts and never answers (a stopped process); replica 2 is a
  // healthy standby behind it in every agent's list. The leader's link is
  // cut: its agents' connections go quiet, the probe meets replica 1 first,
  // and only replica 2's answer can keep the workers before the fence.
  FakeReplicas f(3, 3);
  FormFirstGeneration(f, 3);
  f.Hang(1);
  f.Cut(0, true);
  f.RunFor(8s);
  CheckFollowedWithoutRestart(f, 3, 2);
}

TEST_CASE("a partitioned agent fences before a generation forms without it, then a leader dies",
          "[rdzv][client][failover]") {
  FakeReplicas f(3, 3);
  FormFirstGeneration(f, 3);
  f.CutAgent(2, true);
  f.RunFor(2s);
  CHECK(f.running(2) == std::nullopt);  // fenced at fence_timeout
  CHECK(f.fences() == 1);
  f.RunFor(6s);  // the leader gives node2 up; a generation forms without it
  CHECK(f.newest_generation() >= 2);
  CHECK(f.running(0) == f.newest_generation());
  f.CutAgent(2, false);  // healed: node2 comes back, suspecting every replica it timed out on
  f.RunFor(500ms);
  f.Kill(0);  // and the leader dies a moment later
  f.RunFor(12s);
  INFO(f.transcript());
  CHECK(f.leader() == 1);
  CheckAllServedBy(f, 3, 2);
  for (int a = 0; a < 3; ++a) {
    INFO("node" << a);
    CHECK(f.running(a) == f.newest_generation());
  }
}

TEST_CASE("through failovers, partitions and hung replicas, every agent moves by the table",
          "[rdzv][client][failover]") {
  const auto fault = GENERATE(as<std::string>{}, "kill", "cut", "hang and cut", "partition");
  INFO(fault);
  FakeReplicas f(3, 3);
  FormFirstGeneration(f, 3);
  if (fault == "kill") f.Kill(0);
  if (fault == "cut") f.Cut(0, true);
  if (fault == "hang and cut") {
    f.Hang(1);
    f.Cut(0, true);
  }
  if (fault == "partition") {
    f.CutAgent(2, true);
    f.RunFor(8s);
    f.CutAgent(2, false);
    f.RunFor(500ms);
    f.Kill(0);
  }
  f.RunFor(12s);
  for (int a = 0; a < 3; ++a) {
    INFO("node" << a);
    const auto& stray = f.machine(a).stray_transition();
    CHECK((stray ? ClientTransitionText(*stray) : "none") == "none");
    CHECK(f.machine(a).state() == State::kServed);
  }
}

}  // namespace
}  // namespace muster::rdzv
