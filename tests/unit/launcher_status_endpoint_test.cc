// `muster status` asks, unless told, the rendezvous a job started here
// would use.
#include <catch2/catch.hpp>

#include "launcher/status_endpoint.h"
#include "tests/unit/launcher_test_support.h"

namespace muster {
namespace {

using testing::EnvOf;

TEST_CASE("status asks --rdzv-endpoint, else PET_RDZV_ENDPOINT, else localhost:29400") {
  const std::string flag = "head:1234";
  const auto env = EnvOf({{"PET_RDZV_ENDPOINT", "node0:29401"}});
  CHECK(ChooseStatusEndpoint(&flag, env).text == "head:1234");
  CHECK(ChooseStatusEndpoint(&flag, env).origin == "--rdzv-endpoint");
  CHECK(ChooseStatusEndpoint(nullptr, env).text == "node0:29401");
  CHECK(ChooseStatusEndpoint(nullptr, env).origin == "PET_RDZV_ENDPOINT");
  CHECK(ChooseStatusEndpoint(nullptr, EnvOf({})).text == "localhost:29400");
  CHECK(ChooseStatusEndpoint(nullptr, EnvOf({{"PET_RDZV_ENDPOINT", ""}})).origin == "default");
}

TEST_CASE("status presents --token-file, else the token_file a job's PET_RDZV_CONF names") {
  const std::string flag = "/flag/token";
  const auto env = EnvOf({{"PET_RDZV_CONF", "join_timeout=5,token_file=/etc/muster/token"}});
  CHECK(ChooseStatusTokenFile(&flag, env) == "/flag/token");
  CHECK(ChooseStatusTokenFile(nullptr, env) == "/etc/muster/token");
  CHECK(ChooseStatusTokenFile(nullptr, EnvOf({{"PET_RDZV_CONF", "join_timeout=5"}})) ==
        std::nullopt);
  CHECK(ChooseStatusTokenFile(nullptr, EnvOf({})) == std::nullopt);
}

}  // namespace
}  // namespace muster
