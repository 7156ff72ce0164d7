#include <catch2/catch.hpp>

#include "launcher/report/status_command.h"

TEST_CASE("the status table shows every node with its ranks and heartbeat age", "[status]") {
  const std::string doc = R"({"runs":[{"run_id":"job","state":"running","generation":3,
    "min_nodes":2,"max_nodes":3,"restart_count":1,"max_restarts":2,"nodes":[
    {"node_id":"a:1:2","host":"a","state":"member","connected":true,"local_world_size":2,
     "heartbeat_age_ms":120,"group_rank":0,"global_ranks":[0,1]},
    {"node_id":"b:1:2","host":"b","state":"waiting","connected":false,"local_world_size":4,
     "heartbeat_age_ms":1500}]}]})";
  const std::string table = muster::FormatStatusTable(doc);
  CHECK(table.find("run job: running, generation 3, nodes 2 (min 2, max 3), restarts 1/2") !=
        std::string::npos);
  CHECK(table.find("0..1") != std::string::npos);
  CHECK(table.find("0.12s") != std::string::npos);
  CHECK(table.find("1.50s (disconnected)") != std::string::npos);
  // Workers that report no steps: the run says so, its nodes show no rate.
  CHECK(table.find("  no step reports\n") != std::string::npos);
}

TEST_CASE("the status table shows steps per second and marks stragglers", "[status]") {
  const std::string doc = R"({"runs":[{"run_id":"job","state":"running","generation":1,
    "min_nodes":3,"max_nodes":3,"restart_count":0,"max_restarts":0,
    "median_steps_per_second":9.75,"stragglers":1,"nodes":[
    {"node_id":"a","host":"ha","state":"member","connected":true,"local_world_size":1,
     "heartbeat_age_ms":100,"group_rank":0,"global_ranks":[0,0],"steps_per_second":9.75,
     "straggler":false},
    {"node_id":"b","host":"hb","state":"member","connected":true,"local_world_size":1,
     "heartbeat_age_ms":100,"group_rank":1,"global_ranks":[1,1],"steps_per_second":0.5,
     "straggler":true},
    {"node_id":"c","host":"hc","state":"member","connected":true,"local_world_size":1,
     "heartbeat_age_ms":100,"group_rank":2,"global_ranks":[2,2],"straggler":false}]}]})";
  const std::string table = muster::FormatStatusTable(doc);
  INFO(table);
  CHECK(table.find("  median 9.75 steps/s, 1 straggler\n") != std::string::npos);
  CHECK(table.find("STEPS/S") != std::string::npos);
  CHECK(table.find(" 0.5 ") != std::string::npos);
  CHECK(table.find("0.10s (straggler)\n") != std::string::npos);
  // One straggler line only; the node without a rate shows "-".
  CHECK(table.find("(straggler)") == table.rfind("(straggler)"));
  CHECK(table.find(" -         0.10s\n") != std::string::npos);
}

TEST_CASE("the status table names the slow ranks by compute time and the goodput", "[status]") {
  const std::string doc = R"({"runs":[{"run_id":"job","state":"running","generation":1,
    "min_nodes":2,"max_nodes":2,"restart_count":0,"max_restarts":0,
    "median_steps_per_second":14,"stragglers":1,"median_compute_ms":10.6,
    "slow_ranks":[{"rank":3,"node_id":"b","host":"hb","compute_ms":47.3},
                  {"rank":5,"node_id":"c","host":"hc"}],
    "goodput":{"ratio":0.914,"wall_s":20.0},"nodes":[]}]})";
  const std::string table = muster::FormatStatusTable(doc);
  INFO(table);
  CHECK(table.find("  median 14 steps/s, 1 straggler, median compute 10.6 ms/step, slow: rank 3 "
                   "on hb (47.3 ms), rank 5 on hc, goodput 91.4 %\n") != std::string::npos);
  // A malformed entry is named, not guessed.
  const std::string bad = R"({"runs":[{"run_id":"job","state":"running","generation":1,
    "min_nodes":2,"max_nodes":2,"restart_count":0,"max_restarts":0,
    "median_steps_per_second":14,"slow_ranks":[{"rank":"three"}],"nodes":[]}]})";
  CHECK(muster::FormatStatusTable(bad).find("slow_ranks[0].rank") != std::string::npos);
}

TEST_CASE("an empty or unreadable status document is said plainly", "[status]") {
  CHECK(muster::FormatStatusTable(R"({"runs":[]})") == "no runs\n");
  CHECK(muster::FormatStatusTable("not json") == "unreadable status document\n");
}

TEST_CASE("status prints what a joiner sent with its control characters escaped", "[status]") {
  // ESC ] 0 ; ... BEL retitles the terminal, ESC [ 2 J clears it, U+009B
  // is CSI to many terminals; a newline would forge a row.
  const std::string doc = R"({"runs":[{"run_id":"job\u001b]0;owned\u0007","state":"ended",
    "generation":1,"min_nodes":1,"max_nodes":1,"restart_count":0,"max_restarts":0,
    "message":"node x failed\n  forged line\u001b[2J","nodes":[
    {"node_id":"a\u009b2J","host":"h\u001b[31mred","state":"member\u007f","connected":true,
     "local_world_size":1,"heartbeat_age_ms":5}]}]})";
  const std::string table = muster::FormatStatusTable(doc);
  INFO(table);
  for (const char c : table) {
    const auto byte = static_cast<unsigned char>(c);
    CHECK((c == '\n' || (byte >= 0x20 && byte != 0x7f && byte != 0xc2)));
  }
  CHECK(table.find("run job\\x1b]0;owned\\x07: ended") != std::string::npos);
  CHECK(table.find("  node x failed\\n  forged line\\x1b[2J\n") != std::string::npos);
  CHECK(table.find("a\\u009b2J") != std::string::npos);
  CHECK(table.find("h\\x1b[31mred") != std::string::npos);

  const std::string json = muster::StatusJsonForTerminal(doc);
  for (const char c : json) {
    const auto byte = static_cast<unsigned char>(c);
    CHECK((byte >= 0x20 && byte < 0x7f));
  }
  CHECK(json.find(R"("node_id":"a\u009b2J")") != std::string::npos);
  CHECK(json.find(R"("state":"member\u007f")") != std::string::npos);
}

TEST_CASE("a status document with a field of the wrong type is an error line naming it",
          "[status]") {
  const auto table = [](const std::string& doc) { return muster::FormatStatusTable(doc); };
  CHECK(table(R"({"runs":[{"run_id":"j","nodes":[{"node_id":"a","host":7}]}]})") ==
        "malformed status document: runs[0].nodes[0].host is a number, not a string\n");
  CHECK(table(R"({"runs":[{"run_id":"j","generation":"3","nodes":[]}]})") ==
        "malformed status document: runs[0].generation is a string, not an integer\n");
  CHECK(table(R"({"runs":[{"run_id":"j","nodes":[{"global_ranks":[0]}]}]})") ==
        "malformed status document: runs[0].nodes[0].global_ranks is not [first, last]\n");
  CHECK(table(R"({"runs":[{"run_id":"j","nodes":{"a":1}}]})") ==
        "malformed status document: runs[0].nodes is an object, not an array\n");
  CHECK(table(R"({"runs":[{"run_id":"j"}]})").starts_with("run j: "));  // no nodes: none shown
  CHECK(table(R"({"runs":[3]})") ==
        "malformed status document: runs[0] is a number, not an object\n");
  CHECK(table(R"({"runs":{"x":1}})") ==
        "malformed status document: runs is an object, not an array\n");
  CHECK(table(R"({"replica":{"leader":"a","standbys":[1]},"runs":[]})") ==
        "malformed status document: replica.standbys[0] is a number, not a string\n");
  CHECK(table(R"([1,2])") == "unreadable status document\n");
}
