// agent_metrics: the agent's counters in Prometheus' text format, as its
// health endpoint serves them at /metrics.
#include <catch2/catch.hpp>

#include <map>
#include <sstream>
#include <string>

#include "launcher/agent/agent_metrics.h"

namespace muster {
namespace {

// Every sample line's name and value; checks each has a HELP and a TYPE.
std::map<std::string, std::string> Samples(const std::string& text) {
  std::map<std::string, std::string> samples;
  std::map<std::string, int> described;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
      std::istringstream words(line.substr(7));
      std::string name;
      words >> name;
      ++described[name];
      continue;
    }
    const auto space = line.find(' ');
    REQUIRE(space != std::string::npos);
    samples[line.substr(0, space)] = line.substr(space + 1);
  }
  for (const auto& [name, value] : samples) {
    INFO(name);
    CHECK(described[name] == 2);
  }
  return samples;
}

TEST_CASE("a static agent's metrics say refusals, health and attempt", "[agent_metrics]") {
  AgentCounters counters;
  counters.store_refused = 3;
  counters.attempt = 2;
  const std::string text = AgentMetricsText(counters);
  const auto samples = Samples(text);
  CHECK(samples.at("muster_store_refused_total") == "3");
  CHECK(samples.at("muster_agent_healthy") == "1");
  CHECK(samples.at("muster_agent_attempt") == "2");
  CHECK(samples.count("muster_agent_generation") == 0);
  CHECK(samples.count("muster_agent_rendezvous_silence_seconds") == 0);
  CHECK(text.find("# TYPE muster_store_refused_total counter\n") != std::string::npos);
}

TEST_CASE("an elastic agent's metrics add its generation and the rendezvous' silence",
          "[agent_metrics]") {
  AgentCounters counters;
  counters.healthy = false;
  counters.generation = 4;
  counters.rendezvous_silence_s = 1.5;
  const auto samples = Samples(AgentMetricsText(counters));
  CHECK(samples.at("muster_agent_healthy") == "0");
  CHECK(samples.at("muster_agent_generation") == "4");
  CHECK(samples.at("muster_agent_rendezvous_silence_seconds") == "1.5");
  CHECK(samples.at("muster_store_refused_total") == "0");
}

}  // namespace
}  // namespace muster
