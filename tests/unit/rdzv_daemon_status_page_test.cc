// The status page's document (/status.json): its query, the order of the
// node table, the counts by state, the paging, and its size at 10,000 nodes.
#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rendezvous/daemon/status_page_json.h"
#include "tests/unit/rdzv_state_test_support.h"

using namespace muster::rdzv;
using namespace muster::rdzv::testing;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

NodeStatus Member(const std::string& id, int group_rank) {
  NodeStatus node;
  node.node_id = id;
  node.host = "host-" + id;
  node.member = true;
  node.connected = true;
  node.group_rank = group_rank;
  node.global_rank_offset = group_rank * 8;
  node.local_world_size = 8;
  return node;
}

NodeStatus WaitingNode(const std::string& id) {
  NodeStatus node;
  node.node_id = id;
  node.host = "host-" + id;
  return node;
}

RunStatus::Departed Gone(const std::string& id, const std::string& state,
                         std::chrono::milliseconds age) {
  RunStatus::Departed gone;
  gone.node = Member(id, 9);
  gone.state = state;
  gone.why = state == "left" ? "left" : "heartbeat timeout";
  gone.age = age;
  gone.generation = 1;
  return gone;
}

// A running run of `members` members of 8 workers, by group rank.
RunStatus RunningRun(const std::string& run_id, int members) {
  RunStatus run;
  run.run_id = run_id;
  run.phase = RunPhase::kRunning;
  run.generation = 3;
  run.min_nodes = 1;
  run.max_nodes = members;
  run.max_restarts = 5;
  run.restart_count = 1;
  for (int i = 0; i < members; ++i) {
    run.nodes.push_back(Member("node" + std::to_string(i), i));
  }
  return run;
}

std::vector<std::string> Ids(const std::vector<NodeRow>& rows) {
  std::vector<std::string> ids;
  for (const NodeRow& row : rows) ids.push_back(row.node->node_id + ":" + std::string(row.state));
  return ids;
}

}  // namespace

TEST_CASE("the page's query names a run and a page, and bad values take their defaults",
          "[rdzv][status_page]") {
  struct Case {
    std::string query;
    std::string run;
    size_t offset;
    size_t limit;
  };
  const std::vector<Case> cases = {
      {"", "", 0, StatusPageQuery::kDefaultLimit},
      {"run=job&offset=200&limit=50", "job", 200, 50},
      {"limit=0", "", 0, 1},
      {"limit=999999", "", 0, StatusPageQuery::kMaxLimit},
      {"offset=-3&limit=x", "", 0, StatusPageQuery::kDefaultLimit},
      {"run=my%20job+2&other=1&novalue", "my job 2", 0, StatusPageQuery::kDefaultLimit},
      {"run=bad%zzescape%4", "bad%zzescape%4", 0, StatusPageQuery::kDefaultLimit},
  };
  for (const Case& k : cases) {
    INFO("query '" << k.query << "'");
    const StatusPageQuery q = ParseStatusPageQuery(k.query);
    CHECK(q.run == k.run);
    CHECK(q.offset == k.offset);
    CHECK(q.limit == k.limit);
  }
}

TEST_CASE("the node table lists dead nodes first, the latest first, then left, members, waiting",
          "[rdzv][status_page]") {
  RunStatus run = RunningRun("job", 3);
  std::swap(run.nodes[0], run.nodes[2]);  // the order of the snapshot does not matter
  run.nodes.push_back(WaitingNode("spare-b"));
  run.nodes.push_back(WaitingNode("spare-a"));
  run.departed.push_back(Gone("old-dead", "dead", 9s));
  run.departed.push_back(Gone("gone", "left", 5s));
  run.departed.push_back(Gone("new-dead", "dead", 1s));

  const std::vector<NodeRow> rows = NodeRowsByInterest(run);
  CHECK(Ids(rows) == std::vector<std::string>{"new-dead:dead", "old-dead:dead", "gone:left",
                                              "node0:member", "node1:member", "node2:member",
                                              "spare-a:waiting", "spare-b:waiting"});
  const NodeCounts counts = CountNodes(rows);
  CHECK(counts.dead == 2);
  CHECK(counts.left == 1);
  CHECK(counts.member == 3);
  CHECK(counts.waiting == 2);
  CHECK(counts.straggler == 0);
}

TEST_CASE("stragglers come next, then members by step rate, slowest first, silent ones last",
          "[rdzv][status_page]") {
  RunStatus run = RunningRun("job", 5);
  run.nodes[0].steps_per_second = 10.0;
  run.nodes[1].steps_per_second = 2.0;  // slow, not flagged
  run.nodes[2].steps_per_second = 0.5;
  run.nodes[2].straggler = true;
  run.nodes[3].steps_per_second = 9.0;
  // node4 reports no steps
  run.median_steps_per_second = 9.0;
  run.departed.push_back(Gone("dead", "dead", 1s));

  const std::vector<NodeRow> rows = NodeRowsByInterest(run);
  CHECK(Ids(rows) == std::vector<std::string>{"dead:dead", "node2:straggler", "node1:member",
                                              "node3:member", "node0:member", "node4:member"});
  const NodeCounts counts = CountNodes(rows);
  CHECK(counts.member == 5);  // a straggler is a member too
  CHECK(counts.straggler == 1);

  StatusSnapshot snapshot;
  snapshot.runs.push_back(run);
  const json doc = json::parse(StatusPageJson(snapshot, {}));
  const json& shown = doc["runs"][0];
  CHECK(shown["median_steps_per_second"] == 9.0);
  CHECK(shown["nodes"]["rows"][1]["steps_per_second"] == 0.5);
  CHECK(shown["nodes"]["rows"][1]["state"] == "straggler");
  CHECK_FALSE(shown["nodes"]["rows"][5].contains("steps_per_second"));
}

TEST_CASE("the document pages each run's rows and counts every state", "[rdzv][status_page]") {
  StatusSnapshot snapshot;
  snapshot.runs.push_back(RunningRun("job", 250));
  snapshot.runs[0].departed.push_back(Gone("lost", "dead", 2s));
  snapshot.runs[0].generations.push_back(
      {3, 2s, 250, 2000, "node lost", "lost", "heartbeat timeout", std::nullopt});
  snapshot.runs.push_back(RunningRun("other", 2));
  snapshot.events.push_back({2s, "node_dead", "job", "lost", "host h: heartbeat timeout"});
  snapshot.events.push_back({1s, "generation", "other", "", "generation 3"});

  struct Case {
    std::string query;
    size_t runs;
    size_t offset;
    size_t rows;
    std::string first;
  };
  const std::vector<Case> cases = {
      {"", 2, 0, 100, "lost"},
      {"run=job&offset=100", 1, 100, 100, "node99"},
      {"run=job&offset=200&limit=100", 1, 200, 51, "node199"},
      {"run=job&offset=251", 1, 251, 0, ""},
      {"run=job&offset=9999", 1, 251, 0, ""},
      {"run=nope", 0, 0, 0, ""},
  };
  for (const Case& k : cases) {
    INFO("query '" << k.query << "'");
    const json doc = json::parse(StatusPageJson(snapshot, ParseStatusPageQuery(k.query)));
    REQUIRE(doc["runs"].size() == k.runs);
    if (k.runs == 0) continue;
    const json& run = doc["runs"][0];
    CHECK(run["run_id"] == "job");
    CHECK(run["nodes"]["total"] == 251);
    CHECK(run["nodes"]["offset"] == k.offset);
    CHECK(run["nodes"]["rows"].size() == k.rows);
    if (!k.first.empty()) CHECK(run["nodes"]["rows"][0]["node_id"] == k.first);
  }

  const json doc = json::parse(StatusPageJson(snapshot, ParseStatusPageQuery("run=job")));
  const json& run = doc["runs"][0];
  CHECK(run["state"] == "running");
  CHECK(run["generation"] == 3);
  CHECK(run["world_size"] == 2000);
  CHECK(run["restart_count"] == 1);
  CHECK(run["max_restarts"] == 5);
  CHECK(run["counts"] ==
        json{{"member", 250}, {"waiting", 0}, {"dead", 1}, {"left", 0}, {"straggler", 0}});
  const json& dead = run["nodes"]["rows"][0];
  CHECK(dead["state"] == "dead");
  CHECK(dead["why"] == "heartbeat timeout");
  CHECK(dead["age_ms"] == 2000);
  CHECK(dead["group_rank"] == 9);
  CHECK(dead["global_ranks"] == json{72, 79});
  CHECK_FALSE(dead.contains("steps_per_second"));  // no step reports
  REQUIRE(run["generations"].size() == 1);
  CHECK(run["generations"][0]["reason"] == "node lost");
  CHECK(run["generations"][0]["node_id"] == "lost");
  // Only this run's events.
  REQUIRE(doc["events"].size() == 1);
  CHECK(doc["events"][0]["kind"] == "node_dead");
  CHECK(doc["events"][0]["age_ms"] == 2000);
  CHECK_FALSE(doc.contains("replica"));
}

TEST_CASE("a replica's document says which replica leads", "[rdzv][status_page]") {
  StatusSnapshot snapshot;
  snapshot.replica = ReplicaSummary{"b:1", "standby", 4, "a:1", {"a:1", "b:1", "c:1"}};
  const json doc = json::parse(StatusPageJson(snapshot, {}));
  CHECK(doc["replica"]["leader"] == "a:1");
  CHECK(doc["replica"]["role"] == "standby");
  CHECK(doc["replica"]["epoch"] == 4);
  CHECK(doc["replica"]["standbys"] == json{"b:1", "c:1"});
}

TEST_CASE("a real run's history reaches the document", "[rdzv][status_page]") {
  FakeCluster c(2, 3);
  c.AddAgents(3);
  c.JoinAll();
  c.ExpectNewGeneration();
  c.Disconnect(1);
  c.Advance(c.settings().disconnect_grace);
  c.Run(2s);
  const json doc = json::parse(StatusPageJson(c.core().Status("", c.now()), {}));
  const json& run = doc["runs"][0];
  CHECK(run["generation"] == 2);
  CHECK(run["counts"]["member"] == 2);
  CHECK(run["counts"]["dead"] == 1);
  CHECK(run["nodes"]["rows"][0]["node_id"] == "node1");
  CHECK(run["nodes"]["rows"][0]["state"] == "dead");
  REQUIRE(run["generations"].size() == 2);
  CHECK(run["generations"][1]["reason"] == "node lost");
  CHECK(run["generations"][1]["detail"] == "connection lost");
}

TEST_CASE("at 10,000 nodes the document stays a few tens of KB", "[rdzv][status_page][scale]") {
  StatusSnapshot snapshot;
  snapshot.runs.push_back(RunningRun("big", 10'000));
  for (int i = 0; i < 256; ++i) {
    snapshot.runs[0].departed.push_back(
        Gone("dead" + std::to_string(i), "dead", std::chrono::milliseconds(i)));
  }
  for (uint64_t g = 1; g <= 64; ++g) {
    snapshot.runs[0].generations.push_back({g, std::chrono::milliseconds(1000 * (65 - g)), 10'000,
                                            80'000, "node lost", "dead1", "heartbeat timeout",
                                            std::nullopt});
  }
  for (int i = 0; i < 200; ++i) {
    snapshot.events.push_back({std::chrono::milliseconds(i), "node_dead", "big", "dead1",
                               "host host-dead1: heartbeat timeout (group rank 9)"});
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string text = StatusPageJson(snapshot, {});
  const auto took = std::chrono::steady_clock::now() - start;
  const json doc = json::parse(text);
  CHECK(doc["runs"][0]["nodes"]["total"] == 10'256);
  CHECK(doc["runs"][0]["nodes"]["rows"].size() == StatusPageQuery::kDefaultLimit);
  WARN("/status.json at 10,000 nodes (+256 dead, 64 generations, 200 events): "
       << text.size() << " bytes in "
       << std::chrono::duration_cast<std::chrono::microseconds>(took).count() << " us");
  CHECK(text.size() < 100'000);
}

TEST_CASE("at 10,000 nodes a real core's snapshot and its document cost milliseconds",
          "[rdzv][status_page][scale]") {
  RendezvousCore core(TestSettings());
  const int n = 10'000;
  for (int i = 0; i < n; ++i) {
    Join j;
    j.run_id = "big";
    j.node_id = "node-" + std::to_string(i) + ".cluster.example:4242:12345";
    j.host = "node-" + std::to_string(i) + ".cluster.example";
    j.min_nodes = n;
    j.max_nodes = n;
    j.store_addr = "10.0.0.1";
    core.Handle(MessageEvent{static_cast<ConnId>(100 + i), j}, Time{});
  }
  const auto start = std::chrono::steady_clock::now();
  const StatusSnapshot snapshot = core.Status("", Time{} + 1s);
  const auto snapshot_took = std::chrono::steady_clock::now() - start;
  const std::string text = StatusPageJson(snapshot, {});
  const auto took = std::chrono::steady_clock::now() - start;
  REQUIRE(snapshot.runs.at(0).generation == 1);
  CHECK(json::parse(text)["runs"][0]["counts"]["member"] == n);
  const auto us = [](auto d) {
    return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
  };
  WARN("10,000 members (host names of 26 bytes): snapshot "
       << us(snapshot_took) << " us, snapshot and document " << us(took) << " us, " << text.size()
       << " bytes");
}
