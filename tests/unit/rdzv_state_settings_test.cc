// Settings::FromConf: torchrun's --rdzv-conf keys, validation messages, and
// the timeouts derived from others.
#include <catch2/catch.hpp>

#include "rendezvous/state/settings.h"

using namespace muster::rdzv;
using Conf = std::map<std::string, std::string>;

TEST_CASE("settings read torchrun's rdzv-conf keys in seconds", "[rdzv][settings]") {
  auto s = Settings::FromConf({{"join_timeout", "900"},
                               {"last_call_timeout", "0.5"},
                               {"close_timeout", "10"},
                               {"keep_alive_interval", "0.2"},
                               {"keep_alive_max_attempt", "4"},
                               {"disconnect_grace", "0.1"},
                               {"is_host", "1"}});  // the caller's key: ignored here
  REQUIRE(s.ok());
  CHECK(s->join_timeout == Duration(900'000));
  CHECK(s->last_call_timeout == Duration(500));
  CHECK(s->close_timeout == Duration(10'000));
  CHECK(s->keep_alive_interval == Duration(200));
  CHECK(s->keep_alive_max_attempt == 4);
  CHECK(s->disconnect_grace == Duration(100));
}

TEST_CASE("settings without keys are the documented defaults", "[rdzv][settings]") {
  auto s = Settings::FromConf({});
  REQUIRE(s.ok());
  CHECK(s->join_timeout == Duration(600'000));
  CHECK(s->last_call_timeout == Duration(2'000));
  CHECK(s->close_timeout == Duration(3'000));
  CHECK(s->keep_alive_interval == Duration(500));
  CHECK(s->heartbeat_timeout == Duration(1'250));
  CHECK(s->fence_timeout == Duration(1'000));
  CHECK(s->drain_timeout == Duration(45'000));
  CHECK(s->hello_timeout == Duration(5'000));
  CHECK(s->idle_timeout == Duration(60'000));
  CHECK(s->connect_timeout == Duration(2'000));   // 4 x keep_alive_interval
  CHECK(s->failover_timeout == Duration(3'500));  // fence_timeout + lease 2 s + expiry 0.5 s
  CHECK(s->straggler_fraction == 0.5);
  CHECK(s->straggler_window == Duration(30'000));
  // The daemon acks at most every fence_timeout / 3: at the default interval,
  // every heartbeat, so an agent hears from it twice within its fence timeout.
  CHECK(s->keep_alive_interval >= s->fence_timeout / 3);
  CHECK(s->keep_alive_interval * 2 <= s->fence_timeout);
}

TEST_CASE("heartbeat_timeout is keep_alive_interval times keep_alive_max_attempt unless given",
          "[rdzv][settings]") {
  auto derived =
      Settings::FromConf({{"keep_alive_interval", "0.5"}, {"keep_alive_max_attempt", "3"}});
  REQUIRE(derived.ok());
  CHECK(derived->heartbeat_timeout == Duration(1'500));
  CHECK(derived->fence_timeout == Duration(1'200));  // 0.8 x heartbeat_timeout

  auto given = Settings::FromConf({{"keep_alive_interval", "0.5"}, {"heartbeat_timeout", "4"}});
  REQUIRE(given.ok());
  CHECK(given->heartbeat_timeout == Duration(4'000));
  CHECK(given->fence_timeout == Duration(3'200));
}

TEST_CASE("settings refuse bad values with a message quoting key and value", "[rdzv][settings]") {
  auto [key, value] = GENERATE(table<std::string, std::string>({
      {"join_timeout", "-1"},
      {"join_timeout", "0"},
      {"join_timeout", ""},
      {"join_timeout", "ten"},
      {"join_timeout", "nan"},
      {"join_timeout", "inf"},
      {"last_call_timeout", "2s"},
      {"close_timeout", "1e9"},
      {"close_timeout", "0.0001"},
      {"keep_alive_interval", "-0.25"},
      {"disconnect_grace", "0"},
      {"heartbeat_timeout", "x"},
      {"fence_timeout", "-3"},
      {"keep_alive_max_attempt", "0"},
      {"keep_alive_max_attempt", "1.5"},
      {"keep_alive_max_attempt", "many"},
      {"keep_alive_max_attempt", "100000"},
      {"straggler_fraction", "0"},
      {"straggler_fraction", "1.5"},
      {"straggler_fraction", "-0.5"},
      {"straggler_fraction", "half"},
      {"straggler_fraction", "nan"},
      {"straggler_window", "0"},
      {"straggler_window", "30s"},
  }));
  INFO(key << "=" << value);
  auto s = Settings::FromConf({{key, value}});
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().IsInvalidArgument());
  CHECK_THAT(s.status().message(), Catch::Contains(key + "='" + value + "'"));
}

TEST_CASE("heartbeat_timeout must be longer than keep_alive_interval", "[rdzv][settings]") {
  auto s = Settings::FromConf({{"keep_alive_interval", "2"}, {"heartbeat_timeout", "2"}});
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.status().message(),
             Catch::Contains("heartbeat_timeout") && Catch::Contains("keep_alive_interval"));
}

TEST_CASE("the daemon's and the connection's timeouts are settings too", "[rdzv][settings]") {
  auto s = Settings::FromConf({{"drain_timeout", "90"},
                               {"hello_timeout", "1"},
                               {"idle_timeout", "30"},
                               {"keep_alive_interval", "0.25"}});
  REQUIRE(s.ok());
  CHECK(s->drain_timeout == Duration(90'000));
  CHECK(s->hello_timeout == Duration(1'000));
  CHECK(s->idle_timeout == Duration(30'000));
  CHECK(s->connect_timeout == Duration(1'000));  // follows keep_alive_interval unless given
  auto given = Settings::FromConf({{"keep_alive_interval", "0.25"}, {"connect_timeout", "3"}});
  REQUIRE(given.ok());
  CHECK(given->connect_timeout == Duration(3'000));
}

TEST_CASE("idle_timeout within heartbeat_timeout is refused", "[rdzv][settings]") {
  auto s = Settings::FromConf({{"heartbeat_timeout", "2"}, {"idle_timeout", "2"}});
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message() ==
        "--rdzv-conf: idle_timeout=2.000000s must be longer than heartbeat_timeout=2.000000s");
}

TEST_CASE("fence_timeout at or above heartbeat_timeout is refused", "[rdzv][settings]") {
  for (const char* fence : {"1", "1.5"}) {
    INFO("fence_timeout=" << fence);
    auto s = Settings::FromConf({{"heartbeat_timeout", "1"}, {"fence_timeout", fence}});
    REQUIRE_FALSE(s.ok());
    CHECK_THAT(s.status().message(),
               Catch::Contains("fence_timeout") && Catch::Contains("heartbeat_timeout"));
  }
  auto ok = Settings::FromConf({{"heartbeat_timeout", "1"}, {"fence_timeout", "0.9"}});
  REQUIRE(ok.ok());
  CHECK(ok->fence_timeout == Duration(900));
}

TEST_CASE("failover_timeout follows fence_timeout and must exceed it", "[rdzv][settings]") {
  auto derived = Settings::FromConf({{"heartbeat_timeout", "4"}});
  REQUIRE(derived.ok());
  CHECK(derived->failover_timeout == Duration(5'700));  // fence 3.2 s + 2.5 s
  auto given = Settings::FromConf({{"failover_timeout", "2.5"}});
  REQUIRE(given.ok());
  CHECK(given->failover_timeout == Duration(2'500));
  for (const char* failover : {"1", "0.5"}) {
    INFO("failover_timeout=" << failover);
    auto s = Settings::FromConf({{"failover_timeout", failover}});
    REQUIRE_FALSE(s.ok());
    CHECK_THAT(s.status().message(),
               Catch::Contains("failover_timeout") && Catch::Contains("fence_timeout"));
  }
}

TEST_CASE("every listed key is one that settings read", "[rdzv][settings]") {
  for (std::string_view key : Settings::kKeys) {
    INFO(key);
    CHECK(Settings::IsKey(key));
    // A bad value is refused quoting the key: FromConf reads it.
    auto s = Settings::FromConf({{std::string(key), "bad"}});
    REQUIRE_FALSE(s.ok());
    CHECK_THAT(s.status().message(), Catch::Contains(std::string(key) + "='bad'"));
  }
  CHECK_FALSE(Settings::IsKey("is_host"));
  CHECK_FALSE(Settings::IsKey("heartbeat_timout"));
}

TEST_CASE("unknown keys are left to the caller, who may refuse them by name", "[rdzv][settings]") {
  const std::map<std::string, std::string> conf = {{"heartbeat_timout", "9"},
                                                   {"join_timeout", "60"}};
  // FromConf leaves them alone (the agent passes is_host, token_file, ...)...
  auto s = Settings::FromConf(conf);
  REQUIRE(s.ok());
  CHECK(s->heartbeat_timeout == Settings{}.heartbeat_timeout);
  // ...and musterd, which has none of its own, refuses them.
  muster::Status refused = Settings::RefuseUnknownKeys(conf);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.IsInvalidArgument());
  CHECK_THAT(refused.message(), Catch::Contains("'heartbeat_timout'") &&
                                    Catch::Contains("heartbeat_timeout") &&
                                    Catch::Contains("keep_alive_max_attempt"));
  CHECK(Settings::RefuseUnknownKeys({{"join_timeout", "60"}, {"fence_timeout", "1"}}).ok());
  CHECK(Settings::RefuseUnknownKeys({}).ok());
}

TEST_CASE("rdzv-conf text parses the same for muster and musterd", "[rdzv][settings]") {
  struct Row {
    const char* rule;
    const char* text;
    Conf want;
  };
  const Row rows[] = {
      {"pairs split on ','",
       "join_timeout=60,last_call_timeout=1",
       {{"join_timeout", "60"}, {"last_call_timeout", "1"}}},
      {"spaces around keys and values are trimmed",
       " join_timeout = 60 , last_call_timeout=1",
       {{"join_timeout", "60"}, {"last_call_timeout", "1"}}},
      {"empty items are skipped", ",,join_timeout=60,, ,", {{"join_timeout", "60"}}},
      {"a repeated key keeps its last value", "a=1,a=2", {{"a", "2"}}},
      {"a value may hold '='", "k=a=b", {{"k", "a=b"}}},
      {"nothing is no pair", "", {}},
  };
  for (const Row& row : rows) {
    INFO(row.rule);
    auto conf = Settings::ParseConfText(row.text);
    REQUIRE(conf.ok());
    CHECK(*conf == row.want);
  }
  const std::pair<const char*, const char*> bad[] = {
      {"timeout", "pair 'timeout' is not KEY=VALUE (expected 'key=value,key2=value2')"},
      {"=5", "pair '=5' is not KEY=VALUE (expected 'key=value,key2=value2')"},
      {"a= ", "pair 'a= ' is not KEY=VALUE (expected 'key=value,key2=value2')"},
      {"a=1,b\n=", "pair 'b\\n=' is not KEY=VALUE (expected 'key=value,key2=value2')"},
  };
  for (const auto& [text, message] : bad) {
    INFO(text);
    auto conf = Settings::ParseConfText(text);
    REQUIRE_FALSE(conf.ok());
    CHECK(conf.status().message() == message);
  }
}

TEST_CASE("the straggler rule's keys are read", "[rdzv][settings]") {
  auto s = Settings::FromConf({{"straggler_fraction", "0.25"}, {"straggler_window", "3"}});
  REQUIRE(s.ok());
  CHECK(s->straggler_fraction == 0.25);
  CHECK(s->straggler_window == Duration(3'000));
  auto whole = Settings::FromConf({{"straggler_fraction", "1"}});
  REQUIRE(whole.ok());
  CHECK(whole->straggler_fraction == 1.0);
  auto bad = Settings::FromConf({{"straggler_fraction", "2"}});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        "--rdzv-conf: straggler_fraction='2' must be a number above 0 and at most 1 (of the "
        "median step rate)");
}
