#include <catch2/catch.hpp>

#include "launcher/status_command.h"

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
}

TEST_CASE("an empty or unreadable status document is said plainly", "[status]") {
  CHECK(muster::FormatStatusTable(R"({"runs":[]})") == "no runs\n");
  CHECK(muster::FormatStatusTable("not json") == "unreadable status document\n");
}
