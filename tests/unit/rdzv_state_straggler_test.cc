// StragglerDetector (rendezvous/state/straggler_detector.h) as a table of
// evaluations on a hand-driven clock, its changes printed as lines
// ("flagged n2 rate=1 median=10"); then the rule inside a run: the log line
// and the status fields a slow member gets.
#include <catch2/catch.hpp>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "rendezvous/state/straggler_detector.h"
#include "tests/unit/rdzv_state_test_support.h"

using namespace muster::rdzv;
using namespace muster::rdzv::testing;
using muster::Time;
using std::chrono::milliseconds;

namespace {

std::string Text(std::optional<double> v) {
  if (!v) return "none";
  char text[32];
  std::snprintf(text, sizeof text, "%g", *v);
  return text;
}

std::vector<std::string> Lines(const std::vector<StragglerChange>& changes) {
  std::vector<std::string> lines;
  for (const StragglerChange& c : changes) {
    lines.push_back(
        std::string(c.kind == StragglerChange::Kind::kFlagged ? "flagged " : "cleared ") +
        c.node_id + " rate=" + Text(c.rate) + " median=" + Text(c.median));
  }
  return lines;
}

// Members n0..n(k-1) on hosts h0.., with these rates.
std::vector<MemberRate> Members(const std::vector<std::optional<double>>& rates) {
  static const char* kIds[] = {"n0", "n1", "n2", "n3", "n4", "n5"};
  static const char* kHosts[] = {"h0", "h1", "h2", "h3", "h4", "h5"};
  std::vector<MemberRate> members;
  for (size_t i = 0; i < rates.size(); ++i) members.push_back({kIds[i], kHosts[i], rates[i]});
  return members;
}

constexpr StragglerRule kRule{0.5, milliseconds(30'000)};

struct Step {
  int at_seconds;
  std::vector<std::optional<double>> rates;
  std::vector<std::string> changes;
};

void RunTable(const std::vector<Step>& steps, StragglerRule rule = kRule) {
  StragglerDetector detector(rule);
  for (const Step& step : steps) {
    INFO("at " << step.at_seconds << " s");
    const Time now = Time{} + std::chrono::seconds(step.at_seconds);
    CHECK(Lines(detector.Evaluate(Members(step.rates), now)) == step.changes);
  }
}

}  // namespace

TEST_CASE("a node below the fraction of the median for the window is flagged, once",
          "[rdzv][straggler]") {
  RunTable({
      {0, {10, 10, 1}, {}},
      {29, {10, 10, 1}, {}},
      {30, {10, 10, 1}, {"flagged n2 rate=1 median=10"}},
      {31, {10, 10, 1}, {}},
  });
}

TEST_CASE("equal rates, and a rate at the fraction exactly, flag nobody", "[rdzv][straggler]") {
  RunTable({
      {0, {10, 10, 10}, {}},
      {60, {10, 10, 10}, {}},
      {61, {10, 10, 5}, {}},
      {120, {10, 10, 5}, {}},
      {121, {0, 0, 0}, {}},  // nobody steps: a median of 0 flags nobody
      {200, {0, 0, 0}, {}},
  });
}

TEST_CASE("a flagged node that recovers is cleared, and its window starts again",
          "[rdzv][straggler]") {
  RunTable({
      {0, {10, 10, 2}, {}},
      {30, {10, 10, 2}, {"flagged n2 rate=2 median=10"}},
      {40, {10, 10, 9}, {"cleared n2 rate=9 median=10"}},
      {41, {10, 10, 2}, {}},
      {70, {10, 10, 2}, {}},
      {71, {10, 10, 2}, {"flagged n2 rate=2 median=10"}},
  });
}

TEST_CASE("a break above the fraction restarts the window", "[rdzv][straggler]") {
  RunTable({
      {0, {10, 10, 2}, {}},
      {20, {10, 10, 8}, {}},
      {21, {10, 10, 2}, {}},
      {50, {10, 10, 2}, {}},
      {51, {10, 10, 2}, {"flagged n2 rate=2 median=10"}},
  });
}

TEST_CASE("fewer than three reporting nodes judge nobody", "[rdzv][straggler]") {
  RunTable({
      {0, {10, 1}, {}},
      {100, {10, 1}, {}},
      // Three members, one without a known rate: still two reporting.
      {101, {10, 1, std::nullopt}, {}},
      {200, {10, 1, std::nullopt}, {}},
  });
  // A flagged node is cleared when the run can no longer judge it.
  RunTable({
      {0, {10, 10, 1}, {}},
      {30, {10, 10, 1}, {"flagged n2 rate=1 median=10"}},
      {31, {10, std::nullopt, 1}, {"cleared n2 rate=1 median=none"}},
  });
}

TEST_CASE("a flagged node whose rate becomes unknown is cleared", "[rdzv][straggler]") {
  RunTable({
      {0, {10, 10, 10, 1}, {}},
      {30, {10, 10, 10, 1}, {"flagged n3 rate=1 median=10"}},
      {31, {10, 10, 10, std::nullopt}, {"cleared n3 rate=none median=10"}},
  });
}

TEST_CASE("a node no longer among the members is forgotten without a change", "[rdzv][straggler]") {
  StragglerDetector detector(kRule);
  detector.Evaluate(Members({10, 10, 10, 1}), Time{});
  CHECK(Lines(detector.Evaluate(Members({10, 10, 10, 1}), Time{} + std::chrono::seconds(30))) ==
        std::vector<std::string>{"flagged n3 rate=1 median=10"});
  CHECK(detector.IsStraggler("n3"));
  CHECK(detector.straggler_count() == 1);
  CHECK(Lines(detector.Evaluate(Members({10, 10, 10}), Time{} + std::chrono::seconds(31))).empty());
  CHECK_FALSE(detector.IsStraggler("n3"));
  CHECK(detector.straggler_count() == 0);
  CHECK(detector.median() == 10.0);
}

TEST_CASE("the fraction and the window are the rule's", "[rdzv][straggler]") {
  RunTable({{0, {10, 10, 7}, {}}, {3, {10, 10, 7}, {"flagged n2 rate=7 median=10"}}},
           StragglerRule{0.8, milliseconds(3'000)});
}

// --- in a run -------------------------------------------------------------

namespace {

// Three members stepping at these rates per second, heart-beating every
// 0.5 s for `how_long`; returns every action.
Actions RunSteps(FakeCluster& c, const std::vector<double>& per_second, milliseconds how_long) {
  Actions all;
  const Time end = c.now() + how_long;
  while (c.now() < end) {
    for (size_t i = 0; i < per_second.size(); ++i) {
      Agent& a = c.agent(static_cast<int>(i));
      a.step += static_cast<uint64_t>(per_second[i] / 2);
    }
    for (const Action& a : c.HeartbeatAll()) all.push_back(a);
    for (const Action& a : c.Advance(milliseconds(500))) all.push_back(a);
  }
  return all;
}

Settings StragglerSettings() {
  Settings s = TestSettings();
  s.straggler_window = milliseconds(3'000);
  return s;
}

const NodeStatus& NodeOf(const RunStatus& run, const std::string& id) {
  for (const NodeStatus& n : run.nodes) {
    if (n.node_id == id) return n;
  }
  FAIL("no node " << id);
  return run.nodes.front();
}

}  // namespace

TEST_CASE("a run flags its slow member in the log and the status, and clears it",
          "[rdzv][straggler]") {
  FakeCluster c(3, 3, 0, StragglerSettings());
  c.AddAgents(3);
  c.JoinAll();
  c.ExpectNewGeneration();
  for (int i = 0; i < 3; ++i) c.agent(i).step = 1;

  Actions actions = RunSteps(c, {20, 20, 2}, milliseconds(8'000));
  CHECK(Logged(actions, "event=straggler run=job node=node2 host=host2 rate=2 median=20"));
  CHECK_FALSE(Logged(actions, "node=node0"));
  RunStatus run = c.core().Status("job", c.now()).runs.at(0);
  CHECK(run.stragglers == 1);
  REQUIRE(run.median_steps_per_second.has_value());
  CHECK(*run.median_steps_per_second == Approx(20));
  CHECK(NodeOf(run, "node2").straggler);
  CHECK(*NodeOf(run, "node2").steps_per_second == Approx(2));
  CHECK_FALSE(NodeOf(run, "node0").straggler);

  actions = RunSteps(c, {20, 20, 20}, milliseconds(8'000));
  CHECK(Logged(actions, "event=straggler_cleared run=job node=node2 host=host2"));
  run = c.core().Status("job", c.now()).runs.at(0);
  CHECK(run.stragglers == 0);
  CHECK_FALSE(NodeOf(run, "node2").straggler);
}

TEST_CASE("a run whose members step alike flags nobody", "[rdzv][straggler]") {
  FakeCluster c(3, 3, 0, StragglerSettings());
  c.AddAgents(3);
  c.JoinAll();
  c.ExpectNewGeneration();
  const Actions actions = RunSteps(c, {10, 10, 10}, milliseconds(20'000));
  CHECK_FALSE(Logged(actions, "event=straggler"));
  const RunStatus run = c.core().Status("job", c.now()).runs.at(0);
  CHECK(run.stragglers == 0);
  CHECK(*run.median_steps_per_second == Approx(10));
}

TEST_CASE("a run without step reports shows no rates", "[rdzv][straggler]") {
  FakeCluster c(3, 3, 0, StragglerSettings());
  c.AddAgents(3);
  c.JoinAll();
  c.ExpectNewGeneration();
  c.Run(milliseconds(10'000));
  const RunStatus run = c.core().Status("job", c.now()).runs.at(0);
  CHECK_FALSE(run.median_steps_per_second.has_value());
  CHECK(run.stragglers == 0);
  for (const NodeStatus& n : run.nodes) CHECK_FALSE(n.steps_per_second.has_value());
}

TEST_CASE("a standby node's steps are not judged, and a new generation starts the rates afresh",
          "[rdzv][straggler]") {
  FakeCluster c(3, 3, 0, StragglerSettings());
  c.AddAgents(4);
  c.JoinAll();  // the fourth stands by: the run is full
  c.ExpectNewGeneration();
  Actions actions = RunSteps(c, {10, 10, 10, 1}, milliseconds(8'000));
  CHECK_FALSE(Logged(actions, "event=straggler"));
  RunStatus run = c.core().Status("job", c.now()).runs.at(0);
  CHECK_FALSE(NodeOf(run, "node3").steps_per_second.has_value());

  // node0 dies: node3 is admitted, and every count starts again with the new
  // generation's workers, which have reported nothing yet.
  c.agent(0).silent = true;
  for (int i = 0; i < 4; ++i) c.agent(i).step = 0;
  c.Run(c.settings().heartbeat_timeout + milliseconds(500));
  c.ExpectNewGeneration();
  run = c.core().Status("job", c.now()).runs.at(0);
  for (const NodeStatus& n : run.nodes) CHECK_FALSE(n.steps_per_second.has_value());
}

TEST_CASE("a member whose workers succeeded is done, not a straggler", "[rdzv][straggler]") {
  FakeCluster c(3, 4, 0, StragglerSettings());
  c.AddAgents(4);
  c.JoinAll();
  c.ExpectNewGeneration();
  RunSteps(c, {10, 10, 10, 10}, milliseconds(3'000));
  c.Succeed(3);  // its share of the work is over: its step stays where it is
  const Actions actions = RunSteps(c, {10, 10, 10, 0}, milliseconds(15'000));
  CHECK_FALSE(Logged(actions, "event=straggler"));
  CHECK(c.core().Status("job", c.now()).runs.at(0).stragglers == 0);
}
