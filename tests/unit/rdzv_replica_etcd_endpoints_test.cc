// The etcd endpoints of --etcd and the TLS files that go with https:// ones
// (etcd_client.h): parsing, and the checks made before any connection.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "rendezvous/replica/etcd_client.h"

using namespace muster::rdzv::replica;

namespace {

std::string Message(const muster::Status& status) { return status.message(); }

}  // namespace

TEST_CASE("etcd endpoints: plain, http:// and https://, IPv6 in brackets", "[replica][etcd]") {
  auto parsed = ParseEtcdEndpoints("10.0.0.1:2379,http://10.0.0.2:2379/,https://[fd00::3]:2379");
  REQUIRE(parsed.ok());
  CHECK(*parsed == std::vector<EtcdEndpoint>{{"10.0.0.1", 2379, false},
                                             {"10.0.0.2", 2379, false},
                                             {"fd00::3", 2379, true}});
}

TEST_CASE("a bad etcd endpoint is refused naming it", "[replica][etcd]") {
  CHECK_THAT(Message(ParseEtcdEndpoints("").status()), Catch::Contains("names no etcd endpoint"));
  CHECK_THAT(Message(ParseEtcdEndpoints("https://10.0.0.1").status()),
             Catch::Contains("'https://10.0.0.1': needs a port"));
  CHECK_THAT(Message(ParseEtcdEndpoints("ftp://10.0.0.1:2379").status()),
             Catch::Contains("'ftp://10.0.0.1:2379': must be [http://|https://]HOST:PORT"));
  CHECK_THAT(Message(ParseEtcdEndpoints("10.0.0.1:2379,").status()), Catch::Contains("''"));
}

TEST_CASE("TLS files: given together, only for https://, readable and PEM", "[replica][etcd]") {
  const std::vector<EtcdEndpoint> plain{{"10.0.0.1", 2379, false}};
  const std::vector<EtcdEndpoint> secure{{"10.0.0.1", 2379, true}};
  CHECK(CheckEtcdTls({}, plain).ok());
  CHECK(CheckEtcdTls({}, secure).ok());  // the system's CAs, no client certificate
  CHECK_THAT(Message(CheckEtcdTls({.cert = "c.pem"}, secure)),
             Catch::Contains("--etcd-cert 'c.pem' needs --etcd-key"));
  CHECK_THAT(Message(CheckEtcdTls({.key = "k.pem"}, secure)),
             Catch::Contains("--etcd-key 'k.pem' needs --etcd-cert"));
  CHECK_THAT(Message(CheckEtcdTls({.cacert = "ca.pem"}, plain)),
             Catch::Contains("need an https:// endpoint"));
  const auto dir =
      std::filesystem::temp_directory_path() / ("muster-etcd-tls-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string not_pem = (dir / "not.pem").string();
  std::ofstream(not_pem) << "not a certificate\n";
  const std::string missing = (dir / "missing.pem").string();
  CHECK_THAT(Message(CheckEtcdTls({.cacert = missing}, secure)),
             Catch::Contains("--etcd-cacert '" + missing + "': cannot read it"));
  CHECK_THAT(Message(CheckEtcdTls({.cacert = not_pem}, secure)),
             Catch::Contains("--etcd-cacert '" + not_pem + "': not a PEM certificate"));
  CHECK_THAT(Message(CheckEtcdTls({.cert = not_pem, .key = not_pem}, secure)),
             Catch::Contains("--etcd-cert '" + not_pem + "': not a PEM certificate"));
  std::filesystem::remove_all(dir);
}
