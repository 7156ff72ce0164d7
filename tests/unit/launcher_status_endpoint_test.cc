// `muster status` asks, unless told, the rendezvous a job started here
// would use.
#include <sys/stat.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <string>

#include "launcher/report/status_endpoint.h"
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

TEST_CASE("a malformed PET_RDZV_CONF is an error naming it, never a fall back to plain TCP") {
  const auto env = EnvOf({{"PET_RDZV_CONF", "tls_ca=/etc/ca.pem,token_file"}});
  const auto tls = ChooseStatusTls(nullptr, env);
  REQUIRE_FALSE(tls.ok());
  CHECK(tls.status().message() ==
        "PET_RDZV_CONF: pair 'token_file' is not KEY=VALUE (expected 'key=value,key2=value2')");
  const std::string flag = "tls_ca";
  CHECK(ChooseStatusTls(&flag, EnvOf({})).status().message().starts_with("--rdzv-conf: pair"));
  // A well-formed one gives its files.
  const auto good = ChooseStatusTls(nullptr, EnvOf({{"PET_RDZV_CONF", "tls_ca=/etc/ca.pem"}}));
  REQUIRE(good.ok());
  CHECK(good->ca.path == "/etc/ca.pem");
}

TEST_CASE("status warns about a token file that others than its owner may read") {
  CHECK_FALSE(TokenModeIsShared(0100600));
  CHECK_FALSE(TokenModeIsShared(0100400));
  CHECK(TokenModeIsShared(0100640));
  CHECK(TokenModeIsShared(0100604));
  char dir_template[] = "/tmp/muster-status-token.XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  const std::string path = std::string(dir_template) + "/token";
  std::ofstream(path) << "secret\n";
  ::chmod(path.c_str(), 0640);
  const auto warning = StatusTokenFileWarning("--token-file", path);
  ::chmod(path.c_str(), 0600);
  const auto quiet = StatusTokenFileWarning("--token-file", path);
  std::remove(path.c_str());
  ::rmdir(dir_template);
  REQUIRE(warning.has_value());
  CHECK(*warning == "--token-file '" + path +
                        "' is readable by users other than its owner (mode 0640): whoever reads "
                        "it joins the cluster; chmod go-rwx it");
  CHECK_FALSE(quiet.has_value());
}

}  // namespace
}  // namespace muster
