#include <catch2/catch.hpp>

#include "launcher/plan/host_rules.h"
#include "launcher/plan/launch_plan.h"

using namespace muster;

namespace {

// node0.cluster.example (10.0.0.11 on eth0), Debian's /etc/hosts: the
// hostname resolves to 127.0.1.1.
LocalIdentity Node0() {
  return {{"node0", "node0.cluster.example"},
          {"127.0.1.1", "127.0.0.1", "::1", "10.0.0.11", "fe80::5054:ff:fe12:3456"}};
}

LaunchOptions C10d(std::string endpoint, std::map<std::string, std::string> conf = {}) {
  LaunchOptions o;
  o.script = "train.py";
  o.rdzv_backend = "c10d";
  o.rdzv_endpoint = std::move(endpoint);
  o.rdzv_conf = std::move(conf);
  o.min_nodes = 3;
  o.max_nodes = 3;
  return o;
}

ElasticConfig ConfigOf(const LaunchOptions& o) {
  auto config = MakeElasticConfig(o);
  REQUIRE(config.ok());
  REQUIRE(config->has_value());
  return **config;
}

}  // namespace

TEST_CASE("the endpoint is this machine by loopback, hostname, FQDN or own address",
          "[host_rules]") {
  const LocalIdentity me = Node0();
  CHECK(EndpointIsLocal("localhost", {"127.0.0.1", "::1"}, me));
  CHECK(EndpointIsLocal("127.0.0.1", {}, me));
  CHECK(EndpointIsLocal("127.0.1.1", {}, me));
  CHECK(EndpointIsLocal("::1", {}, me));
  CHECK(EndpointIsLocal("node0", {}, me));
  CHECK(EndpointIsLocal("NODE0", {}, me));
  CHECK(EndpointIsLocal("node0.cluster.example", {}, me));
  CHECK(EndpointIsLocal("10.0.0.11", {}, me));
  CHECK(EndpointIsLocal("::ffff:10.0.0.11", {}, me));
  CHECK(EndpointIsLocal("fe80::5054:ff:fe12:3456", {}, me));
}

TEST_CASE("an alias is this machine when it resolves to one of its addresses", "[host_rules]") {
  const LocalIdentity me = Node0();
  CHECK(EndpointIsLocal("rdzv.cluster.example", {"10.0.0.11"}, me));
  CHECK(EndpointIsLocal("head", {"10.9.9.9", "127.0.1.1"}, me));
  CHECK_FALSE(EndpointIsLocal("rdzv.cluster.example", {"10.0.0.12"}, me));
}

TEST_CASE("another host's name or address is not this machine", "[host_rules]") {
  const LocalIdentity me = Node0();
  // On node1, node0 resolves to its routable address, which node1 does not hold.
  CHECK_FALSE(EndpointIsLocal("node1", {"10.0.0.12"}, me));
  CHECK_FALSE(EndpointIsLocal("10.0.0.12", {}, me));
  CHECK_FALSE(EndpointIsLocal("node00", {}, me));
  CHECK_FALSE(EndpointIsLocal("node0.other.example", {}, me));
  CHECK_FALSE(EndpointIsLocal("unresolvable", {}, me));
  CHECK_FALSE(EndpointIsLocal("", {}, me));
}

TEST_CASE("c10d without is_host lets the agent on the endpoint's host serve", "[host_rules]") {
  const ElasticConfig config = ConfigOf(C10d("node0:29400"));
  CHECK(config.host_if_local);
  CHECK_FALSE(config.is_host);
  CHECK(DecideRendezvousRole(config, true) == RendezvousRole::kServeIfFree);
  CHECK(DecideRendezvousRole(config, false) == RendezvousRole::kJoin);
}

TEST_CASE("an explicit is_host overrides the c10d rule either way", "[host_rules]") {
  const ElasticConfig one = ConfigOf(C10d("node0:29400", {{"is_host", "1"}}));
  CHECK_FALSE(one.host_if_local);
  CHECK(DecideRendezvousRole(one, false) == RendezvousRole::kServe);
  CHECK(DecideRendezvousRole(one, true) == RendezvousRole::kServe);
  const ElasticConfig zero = ConfigOf(C10d("node0:29400", {{"is_host", "0"}}));
  CHECK_FALSE(zero.host_if_local);
  CHECK(DecideRendezvousRole(zero, true) == RendezvousRole::kJoin);
}

TEST_CASE("the muster backend always joins a daemon", "[host_rules]") {
  LaunchOptions o = C10d("node0:29400");
  o.rdzv_backend = "muster";
  const ElasticConfig config = ConfigOf(o);
  CHECK_FALSE(config.host_if_local);
  CHECK(DecideRendezvousRole(config, true) == RendezvousRole::kJoin);
}

TEST_CASE("standalone serves its own rendezvous on loopback", "[host_rules]") {
  LaunchOptions o = C10d("");
  o.standalone = true;
  o.min_nodes = o.max_nodes = 1;
  const ElasticConfig config = ConfigOf(o);
  CHECK(DecideRendezvousRole(config, false) == RendezvousRole::kServe);
  CHECK(StoreBindHost(config.loopback_only, "") == "127.0.0.1");
  CHECK(DaemonBindHost(config.loopback_only, config.host) == "127.0.0.1");
}

TEST_CASE("a job whose endpoints are all on loopback listens on loopback only", "[host_rules]") {
  for (const char* endpoint :
       {"127.0.0.1:29400", "localhost:29400", "127.0.0.1:29400,[::1]:29401"}) {
    INFO(endpoint);
    const ElasticConfig config = ConfigOf(C10d(endpoint));
    CHECK(config.loopback_only);
    CHECK(StoreBindHost(config.loopback_only, "") == "127.0.0.1");
  }
  CHECK(DaemonBindHost(true, "127.0.0.1") == "127.0.0.1");
  CHECK(DaemonBindHost(true, "localhost") == "127.0.0.1");
  CHECK(DaemonBindHost(true, "::1") == "::1");
}

TEST_CASE("one endpoint off loopback, or --local-addr off loopback, listens where others reach",
          "[host_rules]") {
  CHECK_FALSE(ConfigOf(C10d("node0:29400")).loopback_only);
  CHECK_FALSE(ConfigOf(C10d("127.0.0.1:29400,10.0.0.2:29400")).loopback_only);
  LaunchOptions o = C10d("127.0.0.1:29400");
  o.local_addr = "10.0.0.11";
  CHECK_FALSE(ConfigOf(o).loopback_only);
  o.local_addr = "localhost";
  CHECK(ConfigOf(o).loopback_only);
}

TEST_CASE("an embedded daemon listens on every interface of the endpoint's family",
          "[host_rules]") {
  CHECK(DaemonBindHost(false, "node0") == "0.0.0.0");
  CHECK(DaemonBindHost(false, "10.0.0.11") == "0.0.0.0");
  CHECK(DaemonBindHost(false, "::ffff:10.0.0.11") == "0.0.0.0");
  CHECK(DaemonBindHost(false, "::1") == "::");
  CHECK(DaemonBindHost(false, "fd00::11") == "::");
}

TEST_CASE("the store listens on --local-addr only when it is an address", "[host_rules]") {
  CHECK(StoreBindHost(false, "") == "0.0.0.0");
  CHECK(StoreBindHost(false, "10.0.0.11") == "10.0.0.11");
  CHECK(StoreBindHost(false, "127.0.0.1") == "127.0.0.1");
  CHECK(StoreBindHost(false, "fd00::11") == "fd00::11");
  // A name may resolve to 127.0.1.1 here and to a routable address elsewhere.
  CHECK(StoreBindHost(false, "node0") == "0.0.0.0");
}

TEST_CASE("a static store listens on a loopback MASTER_ADDR only when every node is here",
          "[host_rules]") {
  CHECK(AllNodesOnThisMachine({"127.0.0.1"}, ""));
  CHECK(AllNodesOnThisMachine({"localhost", "::1"}, "127.0.0.1"));
  CHECK_FALSE(AllNodesOnThisMachine({"127.0.0.1"}, "10.0.0.11"));
  CHECK_FALSE(AllNodesOnThisMachine({"node0"}, ""));
  CHECK(StaticStoreBindHost("127.0.0.1", 2, true) == "127.0.0.1");
  CHECK(StaticStoreBindHost("localhost", 2, true) == "127.0.0.1");
  CHECK(StaticStoreBindHost("127.0.0.1", 2, false) == "0.0.0.0");
  CHECK(StaticStoreBindHost("node0", 1, false) == "node0");
  CHECK(StaticStoreBindHost("node0", 2, false) == "0.0.0.0");
}
