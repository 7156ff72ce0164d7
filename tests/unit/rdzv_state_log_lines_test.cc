// musterd's log lines carry what agents send (node ids, hosts, run ids,
// messages): none of it can end a line or reach a terminal as a control.
#include <catch2/catch.hpp>

#include "tests/unit/rdzv_state_test_support.h"

using namespace muster::rdzv;
using namespace muster::rdzv::testing;

namespace {

std::vector<std::string> LogLines(const Actions& actions) {
  std::vector<std::string> lines;
  for (const Action& action : actions) {
    if (const auto* log = std::get_if<LogAction>(&action)) lines.push_back(log->line);
  }
  return lines;
}

bool HasControl(const std::string& line) {
  for (const char c : line) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("a node id or host with a newline or an escape cannot forge a log line", "[rdzv][log]") {
  FakeCluster c(2, 2);
  c.AddAgents(2);
  Join join = c.MakeJoin(0);
  join.node_id = "node0\n2026-12-07 [warning] event=run_ended result=failed";
  join.host = "host0\x1b]0;owned\x07\x1b[2J";
  Actions actions = c.Send(0, join);
  const auto lines = LogLines(actions);
  REQUIRE_FALSE(lines.empty());
  for (const std::string& line : lines) {
    INFO(line);
    CHECK_FALSE(HasControl(line));
  }
  CHECK(Logged(actions, "node=node0\\n2026-12-07 [warning] event=run_ended"));
  CHECK(Logged(actions, "host=host0\\x1b]0;owned\\x07\\x1b[2J"));
}
