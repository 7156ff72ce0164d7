// The --config file: its format, its errors, and its place in the precedence
// order command line > PET_ environment > config file > defaults.
#include <catch2/catch.hpp>

#include "launcher/cli/flag_table.h"
#include "tests/unit/cli_test_support.h"

namespace muster::cli {
namespace {

using testing::EnvMap;
using testing::EnvOf;
using testing::Fields;
using testing::TempFile;

std::map<std::string, std::string> ParseWith(const std::string& json,
                                             std::vector<std::string> args = {}, EnvMap env = {}) {
  TempFile file(json);
  args.insert(args.begin(), {"--config", file.path()});
  args.push_back("train.py");
  CliOutcome outcome = ParseLaunchCommandLine(args, EnvOf(env));
  INFO("json: " << json << "\ntext: " << outcome.text);
  REQUIRE(outcome.options);
  return Fields(*outcome.options, outcome.extras);
}

std::string ErrorWith(const std::string& json, std::string* path = nullptr) {
  TempFile file(json);
  if (path != nullptr) *path = file.path();
  CliOutcome outcome = ParseLaunchCommandLine({"--config", file.path(), "t.py"}, EnvOf({}));
  INFO("json: " << json);
  REQUIRE_FALSE(outcome.options);
  CHECK(outcome.exit_code == 2);
  CHECK(outcome.text.find('\n') == std::string::npos);
  const std::string prefix = "muster: error: " + file.path() + ": ";
  REQUIRE(outcome.text.starts_with(prefix));
  return outcome.text.substr(prefix.size());
}

TEST_CASE("config keys take either spelling and their natural JSON types") {
  auto f = ParseWith(R"({
    "nnodes": "1:4", "nproc_per_node": 8, "rdzv-backend": "muster",
    "rdzv_endpoint": "node0:29400", "rdzv_conf": {"join_timeout": 900, "flag": true, "s": "x"},
    "max_restarts": 3, "monitor_interval": 0.5, "shutdown-timeout": 10,
    "gpus": [0, "GPU-abc"], "local_ranks_filter": [2, 0], "no_prefix": true,
    "redirects": 3, "tee": "0:1", "master_port": 29501, "signals_to_handle": ["SIGUSR1"]
  })");
  CHECK(f["max_nodes"] == "4");
  CHECK(f["nproc_per_node"] == "8");
  CHECK(f["rdzv_backend"] == "muster");
  CHECK(f["rdzv_endpoint"] == "node0:29400");
  CHECK(f["rdzv_conf"] == "flag=true,join_timeout=900,s=x");
  CHECK(f["max_restarts"] == "3");
  CHECK(f["monitor_interval_s"] == "0.5");
  CHECK(f["shutdown_timeout_s"] == "10");
  CHECK(f["gpus"] == "0,GPU-abc");
  CHECK(f["local_ranks_filter"] == "0,2");
  CHECK(f["prefix_output"] == "false");
  CHECK(f["redirects"] == "3");
  CHECK(f["tee"] == "0;0:1");
  CHECK(f["master_port"] == "29501");
  CHECK(f["signals_to_handle"] == "SIGUSR1");
  CHECK(f["config_file"].ends_with("job.json"));
}

TEST_CASE("every config key works in both spellings") {
  for (const FlagSpec& flag : Flags()) {
    if (!(flag.sources & kFromConfig)) continue;
    for (const std::string& key : {std::string(flag.name), UnderscoreName(flag)}) {
      // A string value is accepted by every valued key; switches take true.
      std::string value = flag.kind == ValueKind::kSwitch ? "true" : "\"1\"";
      std::vector<std::string> args;
      if (flag.name == "rdzv-conf") value = "\"a=1\"";
      if (flag.name == "rdzv-backend") value = "\"c10d\"";
      if (flag.name == "start-method") value = "\"fork\"";
      if (flag.name == "gpu-visibility") value = "\"all\"";
      if (flag.name == "recovery") value = "\"in-place\"";
      if (flag.name == "numa-binding") value = "\"node\"";
      if (flag.name == "slurm") value = "\"off\"";
      if (flag.name == "signals-to-handle") value = "\"SIGUSR2\"";
      if (flag.name == "warm-import") value = "\"numpy\"";
      if (flag.name == "store-allow") value = "\"10.0.0.0/8\"";
      if (flag.name == "node-rank") args = {"--nnodes", "2"};
      INFO("key: " << key);
      ParseWith("{\"" + key + "\": " + value + "}", args);
    }
  }
}

TEST_CASE("command line beats PET_ beats config file beats default") {
  const std::string json = R"({"nproc_per_node": 2, "role": "from-file"})";
  CHECK(ParseWith(json)["nproc_per_node"] == "2");
  CHECK(ParseWith(json, {}, {{"PET_NPROC_PER_NODE", "3"}})["nproc_per_node"] == "3");
  CHECK(ParseWith(json, {"--nproc-per-node", "4"},
                  {{"PET_NPROC_PER_NODE", "3"}})["nproc_per_node"] == "4");
  // Flags the higher sources do not set still come from the file.
  CHECK(ParseWith(json, {"--nproc-per-node", "4"}, {{"PET_NPROC_PER_NODE", "3"}})["role"] ==
        "from-file");
  CHECK(ParseWith("{}")["nproc_per_node"] == "1");
  // A switch set in the file is turned off by the environment or the command line.
  CHECK(ParseWith(R"({"no_prefix": true})", {}, {{"PET_NO_PREFIX", "0"}})["prefix_output"] ==
        "true");
  CHECK(ParseWith(R"({"standalone": true})", {"--standalone=false"})["standalone"] == "false");
  // --python in the file beats MUSTER_PYTHON, which is only the default.
  CHECK(ParseWith(R"({"python": "/file/python"})", {},
                  {{"MUSTER_PYTHON", "/env/python"}})["python"] == "/file/python");
}

TEST_CASE("PET_CONFIG names the config file, and --config overrides it") {
  TempFile from_env(R"({"role": "env-file"})");
  TempFile from_cli(R"({"role": "cli-file"})");
  auto outcome = ParseLaunchCommandLine({"t.py"}, EnvOf({{"PET_CONFIG", from_env.path()}}));
  REQUIRE(outcome.options);
  CHECK(outcome.options->role == "env-file");
  CHECK(outcome.options->config_file == from_env.path());
  outcome = ParseLaunchCommandLine({"--config", from_cli.path(), "t.py"},
                                   EnvOf({{"PET_CONFIG", from_env.path()}}));
  REQUIRE(outcome.options);
  CHECK(outcome.options->role == "cli-file");
}

TEST_CASE("config errors name the file, the key and the value") {
  CHECK(ErrorWith(R"({"nproc_per_nod": 4})") ==
        "unknown key 'nproc_per_nod'; did you mean 'nproc_per_node'?");
  CHECK(ErrorWith(R"({"nproc-per-nod": 4})") ==
        "unknown key 'nproc-per-nod'; did you mean 'nproc-per-node'?");
  CHECK(ErrorWith(R"({"colour": "red"})") == "unknown key 'colour'");
  CHECK(ErrorWith(R"({"--nnodes": 2})") == "unknown key '--nnodes'; did you mean 'nnodes'?");
  CHECK(ErrorWith(R"({"nnodes": true})") == "nnodes: expected a string or an integer, got true");
  CHECK(ErrorWith(R"({"max_restarts": 2.5})") ==
        "max_restarts: expected a string or an integer, got 2.5");
  CHECK(ErrorWith(R"({"standalone": "yes"})") == "standalone: expected true or false, got \"yes\"");
  CHECK(ErrorWith(R"({"role": null})") == "role: expected a string, got null");
  CHECK(ErrorWith(R"({"rdzv_conf": [1]})") == "rdzv_conf: expected a string or an object, got [1]");
  CHECK(ErrorWith(R"({"monitor_interval": [1]})") ==
        "monitor_interval: expected a string or a number, got [1]");
  CHECK(ErrorWith(R"({"gpus": ["0,1"]})") ==
        "gpus: array item \"0,1\" must be a string or number without ','");
  CHECK(ErrorWith(R"({"gpus": [[0]]})") ==
        "gpus: array item [0] must be a string or number without ','");
  CHECK(ErrorWith(R"({"rdzv_conf": {"a": [1]}})") ==
        "rdzv_conf: entry 'a': [1] must be a key without ',' or '=' and a scalar value "
        "without ','");
  CHECK(ErrorWith(R"({"nproc_per_node": 4, "nproc-per-node": 4})") ==
        "keys 'nproc-per-node' and 'nproc_per_node' set the same flag");
  CHECK(ErrorWith(R"({"config": "other.json"})") == "key 'config' cannot be set in a config file");
  CHECK(ErrorWith(R"({"help": true})") == "key 'help' cannot be set in a config file");
  // Values are checked like command-line values, and named by file and key.
  CHECK(ErrorWith(R"({"nproc_per_node": 0})") ==
        "nproc_per_node: '0' must be a positive integer, 'gpu', 'cpu' or 'auto'");
  CHECK(ErrorWith(R"({"gpus": []})") == "gpus: '' must list GPU ids, e.g. '0,1' or 'GPU-<uuid>'");
  CHECK(ErrorWith(R"([1, 2])") ==
        "must hold a JSON object of flag settings, e.g. {\"nproc_per_node\": 4}, not [1,2]");
  CHECK(ErrorWith("{\"nnodes\": 2,}").starts_with("not valid JSON: parse error at line 1"));
}

TEST_CASE("a config file's cross-flag errors name the keys") {
  TempFile file(R"({"nnodes": 2, "standalone": true})");
  auto outcome = ParseLaunchCommandLine({"--config", file.path(), "t.py"}, EnvOf({}));
  CHECK(outcome.text == "muster: error: " + file.path() + ": standalone runs a single node, but " +
                            file.path() + ": nnodes is '2'");
}

}  // namespace
}  // namespace muster::cli
