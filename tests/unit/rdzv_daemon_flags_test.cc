// musterd's command line: read as muster reads its own, values range-checked
// with errors that name the flag and quote the value; its --config keys from
// the same table; and the man page's and completion's parts derived from it.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>

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
  CHECK(defaults->max_connections == 20000);  // docs/security.md's bound on a flood
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

// `flags` after the config `text` (as --config f.json), or the error.
std::string ConfigError(const std::string& text, DaemonFlags flags = {}) {
  flags.config = "f.json";
  auto applied = ApplyDaemonConfig(text, "f.json", flags);
  if (!applied.ok()) return applied.message();
  auto ranges = CheckDaemonRanges(flags);
  return ranges.ok() ? "ok" : ranges.message();
}

TEST_CASE("musterd's config keys are its flags' names with underscores, and flags win") {
  auto cli = ReadDaemonFlags({"--port", "7", "--etcd-key", "cli.key"});
  REQUIRE(cli.ok());
  DaemonFlags flags = *cli;
  flags.config = "f.json";
  const Status applied = ApplyDaemonConfig(R"({
      // comments, as the packaged /etc/muster/musterd.json has
      "host": "127.0.0.1", "port": 9, "token_file": "t", "metrics_port": 9400,
      "max_connections": 50, "etcd": "h:1", "advertise": "a:2", "etcd_prefix": "/p",
      "etcd_cacert": "ca", "etcd_cert": "c", "etcd_key": "k",
      /* an object, its values as text */
      "rdzv_conf": {"join_timeout": 900, "fence_timeout": "1.5"}})",
                                           "f.json", flags);
  REQUIRE(applied.ok());
  CHECK(flags.host == "127.0.0.1");
  CHECK(flags.port == 7);  // the command line's
  CHECK(flags.token_file == "t");
  CHECK(flags.metrics_port == 9400);
  CHECK(flags.max_connections == 50);
  CHECK(flags.etcd == "h:1");
  CHECK(flags.advertise == "a:2");
  CHECK(flags.etcd_prefix == "/p");
  CHECK(flags.etcd_tls.cacert == "ca");
  CHECK(flags.etcd_tls.cert == "c");
  CHECK(flags.etcd_tls.key == "cli.key");  // the command line's
  CHECK(flags.config_rdzv_conf ==
        std::map<std::string, std::string>{{"join_timeout", "900"}, {"fence_timeout", "1.5"}});
  CHECK(CheckDaemonRanges(flags).ok());
}

TEST_CASE("a bad musterd config gets one line naming the key and quoting the value") {
  struct Row {
    std::string text;
    std::string error;
  };
  const std::vector<Row> rows = {
      {"[1]", "--config: 'f.json' is not a JSON object"},
      {"{", "--config: 'f.json' is not a JSON object"},
      {R"({"prot": 1})", "--config: key 'prot' with value 1 is unknown or has the wrong type"},
      {R"({"port": "1"})",
       "--config: key 'port' with value \"1\" is unknown or has the wrong type"},
      {R"({"port": 1.5})", "--config: key 'port' with value 1.5 is unknown or has the wrong type"},
      {R"({"port": 18446744073709551615})",
       "--config: key 'port' with value 18446744073709551615 is unknown or has the wrong type"},
      {R"({"host": 1})", "--config: key 'host' with value 1 is unknown or has the wrong type"},
      {R"({"token-file": "t"})",
       "--config: key 'token-file' with value \"t\" is unknown or has the wrong type"},
      {R"({"inject": "crash-daemon,after=1s"})",
       "--config: key 'inject' with value \"crash-daemon,after=1s\" is unknown or has the wrong "
       "type"},
      {R"({"config": "other.json"})",
       "--config: key 'config' with value \"other.json\" is unknown or has the wrong type"},
      {R"({"rdzv_conf": "join_timeout=1"})",
       "--config: key 'rdzv_conf' with value \"join_timeout=1\" is unknown or has the wrong type"},
      {R"({"port": 70000})",
       "--config 'f.json' or flags: port=70000 must be an integer from 0 to 65535"},
      {R"({"port": -1})", "--config 'f.json' or flags: port=-1 must be an integer from 0 to 65535"},
      {R"({"metrics_port": -1})", "ok"},  // no metrics server, as by default
      {R"({"metrics_port": -2})",
       "--config 'f.json' or flags: metrics_port=-2 must be an integer from 0 to 65535"},
      {R"({"max_connections": 0})",
       "--config 'f.json' or flags: max_connections=0 must be an integer from 1 to 1000000"},
  };
  for (const Row& row : rows) {
    INFO(row.text);
    CHECK(ConfigError(row.text) == row.error);
  }
  const std::string unknown_conf = ConfigError(R"({"rdzv_conf": {"heartbeat_timout": 1}})");
  CHECK(
      unknown_conf.starts_with("--config: 'f.json': --rdzv-conf: unknown key 'heartbeat_timout'"));
}

TEST_CASE("without a config file, a range error names no file") {
  DaemonFlags flags;
  flags.port = 70000;
  CHECK(CheckDaemonRanges(flags).message() == "port=70000 must be an integer from 0 to 65535");
}

// The text between the lines holding `begin` and `end` in the file at `path`
// (under the source tree).
std::string Generated(const std::string& path, const std::string& begin, const std::string& end) {
  std::ifstream in(std::string(MUSTER_SOURCE_DIR) + "/" + path);
  REQUIRE(in);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t b = text.find(begin);
  REQUIRE(b != std::string::npos);
  const size_t from = text.find('\n', b) + 1;
  const size_t to = text.find(end, from);
  REQUIRE(to != std::string::npos);
  return text.substr(from, to - from);
}

TEST_CASE("the man page's config keys and the completion's lists come from the flag table") {
  INFO("regenerate with build/bin/musterd-docs man|completion");
  CHECK(Generated("packaging/man/musterd.1", "BEGIN generated by musterd-docs man",
                  ".\\\" END generated") == DaemonManOptions());
  CHECK(Generated("packaging/completion/musterd", "# BEGIN generated by musterd-docs completion",
                  "# END generated") == DaemonCompletionLists());
  const std::string lists = DaemonCompletionLists();
  CHECK(lists.find("_musterd_switch_flags=(help version)\n") != std::string::npos);
  CHECK(lists.find("_musterd_file_flags=(config token-file tls-cert tls-key tls-client-ca "
                   "etcd-cacert etcd-cert etcd-key)\n") != std::string::npos);
}

}  // namespace
}  // namespace muster::rdzv
