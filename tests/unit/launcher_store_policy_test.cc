// store_policy: which hosts the agent's worker store admits in each kind of
// run, when it warns, and its bounds from the flags.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "launcher/plan/store_policy.h"

namespace muster {
namespace {

namespace ip = boost::asio::ip;

bool Admits(const StoreAdmissionChoice& choice, const char* peer) {
  return choice.admission.Admits(ip::make_address(peer), ip::make_address("10.0.0.1"));
}

LaunchOptions WithAllow(std::vector<std::string> cidrs) {
  LaunchOptions options;
  options.store_allow = std::move(cidrs);
  return options;
}

TEST_CASE("an elastic master admits the generation's members", "[store_policy]") {
  const auto choice = ElasticStoreAdmission({}, {"10.0.0.2", "10.0.0.3"});
  CHECK(choice.warning.empty());
  CHECK(choice.admission.mode() == store::PeerAdmission::Mode::kMembers);
  CHECK(Admits(choice, "10.0.0.2"));
  CHECK(Admits(choice, "127.0.0.1"));
  CHECK_FALSE(Admits(choice, "10.0.0.4"));
}

TEST_CASE("an elastic master without a member list admits everyone and warns", "[store_policy]") {
  const auto choice = ElasticStoreAdmission({}, {});
  CHECK(choice.admission.mode() == store::PeerAdmission::Mode::kEveryone);
  CHECK(choice.warning.find("event=store_admits_everyone") == 0);
  CHECK(choice.warning.find("--store-allow") != std::string::npos);
}

TEST_CASE("the store-allow CIDRs replace the membership rule, elastic and static",
          "[store_policy]") {
  const LaunchOptions options = WithAllow({"192.168.0.0/16"});
  for (const auto& choice : {ElasticStoreAdmission(options, {"10.0.0.2"}),
                             StaticStoreAdmission(options, "0.0.0.0", 29500)}) {
    CHECK(choice.warning.empty());
    CHECK(choice.admission.mode() == store::PeerAdmission::Mode::kOverride);
    CHECK(Admits(choice, "192.168.3.4"));
    CHECK(Admits(choice, "127.0.0.1"));
    CHECK_FALSE(Admits(choice, "10.0.0.2"));
  }
  CHECK(Admits(ElasticStoreAdmission(WithAllow({"0.0.0.0/0", "::/0"}), {}), "172.16.0.9"));
}

TEST_CASE("a static store admits everyone, warning only when other hosts can reach it",
          "[store_policy]") {
  struct Row {
    std::string bind_host;
    bool warns;
  };
  const std::vector<Row> rows = {
      {"127.0.0.1", false}, {"::1", false},     {"localhost", false},
      {"0.0.0.0", true},    {"10.0.0.1", true}, {"node0", true},
  };
  for (const Row& row : rows) {
    CAPTURE(row.bind_host);
    const auto choice = StaticStoreAdmission({}, row.bind_host, 29500);
    CHECK(choice.admission.mode() == store::PeerAdmission::Mode::kEveryone);
    CHECK(choice.warning.empty() != row.warns);
  }
  CHECK(StaticStoreAdmission({}, "0.0.0.0", 29500).warning ==
        "the worker store on 0.0.0.0:29500 accepts connections from every host (a static run "
        "has no membership list); --store-allow CIDR,... limits it to the job's hosts");
}

TEST_CASE("the store's bounds come from the flags, else the store's defaults", "[store_policy]") {
  LaunchOptions options;
  CHECK(StoreLimits(options).handler.max_keys == store::kDefaultStoreMaxKeys);
  CHECK(StoreLimits(options).handler.max_bytes == store::kDefaultStoreMaxBytes);
  options.store_max_keys = 10;
  options.store_max_bytes = 2048;
  CHECK(StoreLimits(options).handler.max_keys == 10);
  CHECK(StoreLimits(options).handler.max_bytes == 2048);
}

}  // namespace
}  // namespace muster
