// A run's record in etcd (run_record_json.h): what a new leader resumes from.
#include <catch2/catch.hpp>

#include "rendezvous/replica/run_record_json.h"

using namespace muster::rdzv;
using namespace muster::rdzv::replica;

TEST_CASE("a run record round-trips through its etcd value", "[replica][record]") {
  const RunRecord record{.run_id = "job-7",
                         .generation = 1ull << 40,
                         .restart_count = 2,
                         .max_restarts = 3,
                         .min_nodes = 2,
                         .max_nodes = 4,
                         .ended = true};
  CHECK(EncodeRunRecord(record) ==
        R"({"ended":true,"generation":1099511627776,"max_nodes":4,"max_restarts":3,)"
        R"("min_nodes":2,"restart_count":2,"run_id":"job-7"})");
  auto decoded = DecodeRunRecord(EncodeRunRecord(record));
  REQUIRE(decoded.ok());
  CHECK(*decoded == record);
}

TEST_CASE("a later field is ignored, a bad one refused by name", "[replica][record]") {
  auto later = DecodeRunRecord(
      R"({"run_id":"j","generation":1,"restart_count":0,"max_restarts":0,"min_nodes":1,)"
      R"("max_nodes":1,"ended":false,"added_later":[1]})");
  REQUIRE(later.ok());
  CHECK(later->run_id == "j");
  struct Row {
    const char* text;
    const char* why;
  };
  const Row rows[] = {
      {"[]", "not a JSON object"},
      {"not json", "not a JSON object"},
      {R"({"generation":1})", "run_id is not a string"},
      {R"({"run_id":"j","generation":-1})", "generation is not a count"},
      {R"({"run_id":"j","generation":1,"restart_count":4294967296})",
       "restart_count is not a count"},
      {R"({"run_id":"j","generation":1,"restart_count":0,"max_restarts":0,"min_nodes":1,)"
       R"("max_nodes":1})",
       "ended is not true or false"},
  };
  for (const Row& row : rows) {
    INFO(row.text);
    auto bad = DecodeRunRecord(row.text);
    REQUIRE_FALSE(bad.ok());
    CHECK_THAT(bad.status().message(), Catch::Contains(row.why));
  }
}
