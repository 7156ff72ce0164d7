// musterd's command line: read as muster reads its own, values range-checked
// with errors that name the flag and quote the value.
#include <catch2/catch.hpp>

#include "rendezvous/daemon/daemon_flags.h"

namespace muster::rdzv {
namespace {

std::string ErrorOf(std::vector<std::string> args) {
  auto flags = ReadDaemonFlags(args);
  REQUIRE_FALSE(flags.ok());
  return flags.status().message();
}

TEST_CASE("musterd's flags keep their names and defaults, and take prefixes and underscores") {
  auto defaults = ReadDaemonFlags({});
  REQUIRE(defaults.ok());
  CHECK(defaults->host == "0.0.0.0");
  CHECK(defaults->port == 29400);
  CHECK(defaults->metrics_port == -1);
  CHECK(defaults->given.empty());

  auto flags = ReadDaemonFlags({"--host",
                                "127.0.0.1",
                                "--port",
                                "0",
                                "--token_file=t",
                                "--metrics",
                                "9400",
                                "--max-conn",
                                "50",
                                "--inject",
                                "crash-daemon,after=1s",
                                "--inject",
                                "crash-daemon,after=2s",
                                "--inject-seed",
                                "7",
                                "--etcd",
                                "h:1",
                                "--etcd-p",
                                "/p",
                                "--etcd-ca",
                                "ca",
                                "--etcd-cert",
                                "c",
                                "--etcd-k",
                                "k"});
  REQUIRE(flags.ok());
  CHECK(flags->port == 0);
  CHECK(flags->token_file == "t");
  CHECK(flags->metrics_port == 9400);
  CHECK(flags->max_connections == 50);
  CHECK(flags->inject.size() == 2);
  CHECK(flags->inject_seed == 7u);
  CHECK(flags->etcd == "h:1");  // --etcd is exact, though --etcd-prefix starts with it
  CHECK(flags->etcd_prefix == "/p");
  CHECK(flags->etcd_tls.cacert == "ca");
  CHECK(flags->etcd_tls.cert == "c");
  CHECK(flags->etcd_tls.key == "k");
  CHECK(flags->given.contains("metrics-port"));
  CHECK_FALSE(flags->given.contains("config"));
}

TEST_CASE("bad musterd command lines get one line naming the flag and the value") {
  CHECK(ErrorOf({"--prot", "1"}) == "unknown flag '--prot'; did you mean '--port'?");
  CHECK(ErrorOf({"--etcd-c", "x"}) ==
        "ambiguous flag '--etcd-c' could match --etcd-cacert, --etcd-cert");
  CHECK(ErrorOf({"--port", "abc"}) == "--port: 'abc' must be an integer from 0 to 65535");
  CHECK(ErrorOf({"--port", "70000"}) == "--port: '70000' must be an integer from 0 to 65535");
  CHECK(ErrorOf({"--port", "-1"}) == "--port: '-1' must be an integer from 0 to 65535");
  CHECK(ErrorOf({"--metrics-port", "1x"}) ==
        "--metrics-port: '1x' must be an integer from 0 to 65535");
  CHECK(ErrorOf({"--max-connections", "0"}) ==
        "--max-connections: '0' must be an integer from 1 to 1000000");
  CHECK(ErrorOf({"--inject-seed", "x"}) == "--inject-seed: 'x' must be a non-negative integer");
  CHECK(ErrorOf({"serve"}) == "unexpected argument 'serve'");
}

TEST_CASE("musterd's help is in muster's layout and lists every flag") {
  const std::string help = DaemonHelpText();
  CHECK(help.starts_with("usage: musterd [options]\n"));
  for (const char* line : {"  --port PORT\n", "  --token-file, --token_file FILE\n",
                           "  --etcd-cacert, --etcd_cacert FILE\n", "  -h, --help\n"}) {
    INFO(line);
    CHECK(help.find(line) != std::string::npos);
  }
  CHECK(help.find("INT:INT") == std::string::npos);
}

}  // namespace
}  // namespace muster::rdzv
