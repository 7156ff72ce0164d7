// Command lines muster must accept, and the LaunchOptions they produce.
#include <catch2/catch.hpp>

#include "launcher/cli/flag_table.h"
#include "tests/unit/cli_test_support.h"

namespace muster::cli {
namespace {

using testing::EnvOf;
using testing::Fields;

struct Accepted {
  std::vector<std::string> args;
  std::map<std::string, std::string> expect;  // only these fields are checked
};

void CheckAccepted(const Accepted& row, const EnvLookup& env) {
  INFO("args: " << testing::Join(row.args, " "));
  CliOutcome outcome = ParseLaunchCommandLine(row.args, env);
  INFO("text: " << outcome.text);
  REQUIRE(outcome.options.has_value());
  CHECK(outcome.exit_code == 0);
  const auto fields = Fields(*outcome.options, outcome.extras);
  for (const auto& [field, value] : row.expect) {
    INFO("field: " << field);
    REQUIRE(fields.count(field) == 1);
    CHECK(fields.at(field) == value);
  }
}

TEST_CASE("torchrun and muster command lines are accepted with the expected options") {
  const std::vector<Accepted> table = {
      // Defaults, which match torchrun's.
      {{"train.py"},
       {{"min_nodes", "1"},
        {"max_nodes", "1"},
        {"nproc_per_node", "1"},
        {"rdzv_backend", "static"},
        {"rdzv_endpoint", ""},
        {"rdzv_id", "none"},
        {"rdzv_conf", ""},
        {"standalone", "false"},
        {"node_rank", "0"},
        {"master_addr", "127.0.0.1"},
        {"master_port", "unset"},
        {"local_addr", ""},
        {"store_allow", ""},
        {"store_max_keys", "unset"},
        {"store_max_bytes", "unset"},
        {"store_max_connections", "unset"},
        {"max_restarts", "0"},
        {"monitor_interval_s", "0.1"},
        {"start_method", "spawn"},
        {"role", "default"},
        {"run_as_module", "false"},
        {"no_python", "false"},
        {"run_path", "false"},
        {"python", "python3"},
        {"log_dir", ""},
        {"redirects", "0"},
        {"tee", "0"},
        {"local_ranks_filter", "unset"},
        {"prefix_output", "true"},
        {"gpus", "unset"},
        {"gpu_visibility", "all"},
        {"virtual_local_rank", "false"},
        {"duplicate_stdout_filters", ""},
        {"duplicate_stderr_filters", ""},
        {"local_rank_flag", ""},
        {"logs_specs", ""},
        {"shutdown_timeout_s", "30"},
        {"config_file", ""},
        {"script", "train.py"},
        {"script_args", ""},
        {"event_log_handler", "null"},
        {"numa_binding", ""},
        {"signals_to_handle", "SIGTERM,SIGINT,SIGHUP,SIGQUIT"}}},
      // The torchrun quick-start lines.
      {{"--standalone", "--nnodes=1", "--nproc-per-node=4", "train.py", "--lr", "3"},
       {{"standalone", "true"},
        {"rdzv_backend", "c10d"},
        {"rdzv_endpoint", "localhost:0"},
        {"nproc_per_node", "4"},
        {"script_args", "--lr 3"}}},
      {{"--nnodes=1:4", "--nproc_per_node=gpu", "--max_restarts=3", "--rdzv_id=job1",
        "--rdzv_backend=c10d", "--rdzv_endpoint=node0:29400", "train.py"},
       {{"min_nodes", "1"},
        {"max_nodes", "4"},
        {"nproc_per_node", "gpu"},
        {"max_restarts", "3"},
        {"rdzv_id", "job1"},
        {"rdzv_backend", "c10d"},
        {"rdzv_endpoint", "node0:29400"}}},
      {{"--nnodes", "2", "--node_rank", "1", "--master_addr", "10.0.0.1", "--master_port", "29500",
        "train.py"},
       {{"min_nodes", "2"},
        {"max_nodes", "2"},
        {"node_rank", "1"},
        {"master_addr", "10.0.0.1"},
        {"master_port", "29500"}}},
      // Standalone keeps a chosen id, and nnodes 1:1 is one node.
      {{"--standalone", "--nnodes", "1:1", "--rdzv-id", "mine", "t.py"},
       {{"rdzv_id", "mine"}, {"rdzv_backend", "c10d"}}},
      // Everything after SCRIPT is the script's, flags and all.
      {{"-m", "pkg.train", "--nnodes", "9", "-h", "--version", "--", "x"},
       {{"run_as_module", "true"},
        {"script", "pkg.train"},
        {"script_args", "--nnodes 9 -h --version -- x"}}},
      {{"--", "--weird-script-name"}, {{"script", "--weird-script-name"}, {"script_args", ""}}},
      {{"--nproc-per-node", "2", "--", "train.py", "a"},
       {{"nproc_per_node", "2"}, {"script", "train.py"}, {"script_args", "a"}}},
      // Short flags in argparse's forms.
      {{"-r", "3", "-t0:1,1:2", "run.sh"}, {{"redirects", "3"}, {"tee", "0;0:1,1:2"}}},
      {{"-r=1", "-t", "2", "run.sh"}, {{"redirects", "1"}, {"tee", "2"}}},
      // Repeated flags: the last one wins.
      {{"--nnodes", "2", "--nnodes", "3", "t.py"}, {{"max_nodes", "3"}}},
      // Switches may carry an explicit value.
      {{"--standalone=false", "--no-prefix=true", "t.py"},
       {{"standalone", "false"}, {"prefix_output", "false"}}},
      // Values of every shape.
      {{"--nproc-per-node", "cpu", "t.py"}, {{"nproc_per_node", "cpu"}}},
      {{"--nproc-per-node", "auto", "t.py"}, {{"nproc_per_node", "auto"}}},
      {{"--rdzv-conf", " join_timeout = 900 ,,last_call_timeout=30,k=a=b", "t.py"},
       {{"rdzv_conf", "join_timeout=900,k=a=b,last_call_timeout=30"}}},
      {{"--rdzv-endpoint", "[::1]:29400", "t.py"}, {{"rdzv_endpoint", "[::1]:29400"}}},
      {{"--rdzv-endpoint", "[fe80::1%eth0]", "t.py"}, {{"rdzv_endpoint", "[fe80::1%eth0]"}}},
      {{"--rdzv-endpoint", "my-host.example.com", "t.py"},
       {{"rdzv_endpoint", "my-host.example.com"}}},
      {{"--master-port", "0", "t.py"}, {{"master_port", "0"}}},
      {{"--master-port", "65535", "t.py"}, {{"master_port", "65535"}}},
      {{"--monitor-interval", "5", "--shutdown-timeout", "0", "t.py"},
       {{"monitor_interval_s", "5"}, {"shutdown_timeout_s", "0"}}},
      {{"--local-ranks-filter", "3,0,3", "t.py"}, {{"local_ranks_filter", "0,3"}}},
      {{"--local-ranks-filter=", "t.py"}, {{"local_ranks_filter", "unset"}}},
      {{"--gpus", "GPU-8f3c2b1a-0d4e-4c5f-9a6b-7c8d9e0f1a2b,MIG-GPU-ab12/1/0,3", "t.py"},
       {{"gpus", "GPU-8f3c2b1a-0d4e-4c5f-9a6b-7c8d9e0f1a2b,MIG-GPU-ab12/1/0,3"}}},
      {{"--gpus=1,0", "--gpu-visibility=all", "t.py"},
       {{"gpus", "1,0"}, {"gpu_visibility", "all"}}},
      {{"--no-python", "--log-dir", "/tmp/l", "./run.sh", "x"},
       {{"no_python", "true"}, {"log_dir", "/tmp/l"}, {"script", "./run.sh"}}},
      {{"--run-path", "/abs/t.py"}, {{"run_path", "true"}}},
      {{"--python", "/opt/py/bin/python", "t.py"}, {{"python", "/opt/py/bin/python"}}},
      {{"--start-method", "forkserver", "--role", "trainer", "t.py"},
       {{"start_method", "forkserver"}, {"role", "trainer"}}},
      {{"--max-restarts", "0", "t.py"}, {{"max_restarts", "0"}}},
      {{"--numa-binding", "core-complex", "--signals-to-handle", "SIGTERM,SIGUSR1",
        "--event-log-handler", "console", "t.py"},
       {{"numa_binding", "core-complex"},
        {"signals_to_handle", "SIGTERM,SIGUSR1"},
        {"event_log_handler", "console"}}},
  };
  for (const Accepted& row : table) CheckAccepted(row, EnvOf({}));
}

// One sample value per flag: each must work in all four command-line forms,
// as PET_<FLAG>, and (see cli_config_tests.cc) as a config key.
struct Sample {
  std::string_view flag;
  std::string value;  // empty for switches
  std::string field;
  std::string expected;
  std::vector<std::string> also;  // extra args the sample needs
};

const std::vector<Sample>& Samples() {
  static const std::vector<Sample> samples = {
      {"nnodes", "2:4", "max_nodes", "4", {}},
      {"nproc-per-node", "4", "nproc_per_node", "4", {}},
      {"node-rank", "1", "node_rank", "1", {"--nnodes", "2"}},
      {"rdzv-backend", "muster", "rdzv_backend", "muster", {}},
      {"rdzv-endpoint", "node0:29400", "rdzv_endpoint", "node0:29400", {}},
      {"rdzv-id", "job7", "rdzv_id", "job7", {}},
      {"rdzv-conf", "join_timeout=900,a=b", "rdzv_conf", "a=b,join_timeout=900", {}},
      {"standalone", "", "standalone", "true", {}},
      {"master-addr", "10.0.0.1", "master_addr", "10.0.0.1", {}},
      {"master-port", "29501", "master_port", "29501", {}},
      {"local-addr", "10.0.0.2", "local_addr", "10.0.0.2", {}},
      {"store-allow", "10.1.2.3/8,fd00::1", "store_allow", "10.0.0.0/8,fd00::1/128", {}},
      {"store-max-keys", "1000", "store_max_keys", "1000", {}},
      {"store-max-bytes", "64M", "store_max_bytes", "67108864", {}},
      {"store-max-connections", "4096", "store_max_connections", "4096", {}},
      {"max-restarts", "3", "max_restarts", "3", {}},
      {"monitor-interval", "0.5", "monitor_interval_s", "0.5", {}},
      {"start-method", "fork", "start_method", "fork", {}},
      {"role", "trainer", "role", "trainer", {}},
      {"module", "", "run_as_module", "true", {}},
      {"no-python", "", "no_python", "true", {}},
      {"run-path", "", "run_path", "true", {}},
      {"python", "/usr/bin/python3", "python", "/usr/bin/python3", {}},
      {"no-warm-workers", "", "no_warm_workers", "true", {}},
      {"warm-import", "numpy,torch.distributed", "warm_imports", "numpy,torch.distributed", {}},
      {"shutdown-timeout", "5", "shutdown_timeout_s", "5", {}},
      {"log-dir", "/tmp/logs", "log_dir", "/tmp/logs", {}},
      {"redirects", "3", "redirects", "3", {}},
      {"tee", "0:1,1:2", "tee", "0;0:1,1:2", {}},
      {"local-ranks-filter", "2,0", "local_ranks_filter", "0,2", {}},
      {"no-prefix", "", "prefix_output", "false", {}},
      {"gpus", "0,GPU-abc", "gpus", "0,GPU-abc", {}},
      {"gpu-visibility", "isolate", "gpu_visibility", "isolate", {}},
      {"virtual-local-rank", "", "virtual_local_rank", "true", {}},
      {"duplicate-stdout-filters",
       "loss,,acc,step",
       "duplicate_stdout_filters",
       "loss,acc|step",
       {}},
      {"duplicate-stderr-filters", "Traceback", "duplicate_stderr_filters", "Traceback", {}},
      {"logs-specs", "my_specs", "logs_specs", "my_specs", {}},
      {"event-log-handler", "console", "event_log_handler", "console", {}},
      {"numa-binding", "node", "numa_binding", "node", {}},
      {"signals-to-handle", "SIGTERM,SIGUSR1", "signals_to_handle", "SIGTERM,SIGUSR1", {}},
      {"slurm", "off", "slurm", "off", {}},
      {"hang-timeout", "2.5", "hang_timeout_s", "2.5", {}},
      {"recovery", "in-place", "recover_in_place", "true", {}},
      {"recovery-timeout", "0.5", "recovery_timeout_s", "0.5", {}},
      {"inject", "kill-worker,rank=1,step=3", "fault_plan", "kill-worker,rank=1,step=3", {}},
      {"inject-seed", "7", "inject_seed", "7", {}},
      {"dry-run", "", "dry_run", "true", {}},
      {"health-port", "8080", "health_port", "8080", {}},
  };
  return samples;
}

// Flags that are tested elsewhere: actions, --config, and those of `muster launch` only.
bool HasOwnTests(std::string_view flag) {
  return flag == "help" || flag == "version" || flag == "config" || flag == "use-env" ||
         flag == "local-rank-arg";
}

std::string Underscored(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    if (c == '-') c = '_';
  }
  return out;
}

TEST_CASE("every flag in the table has a sample value in these tests") {
  for (const FlagSpec& flag : Flags()) {
    if (HasOwnTests(flag.name)) continue;
    bool found = false;
    for (const Sample& sample : Samples()) found = found || sample.flag == flag.name;
    INFO("flag: " << flag.name);
    CHECK(found);
  }
}

TEST_CASE("every flag works in both spellings, with a space or '=' before the value") {
  for (const Sample& sample : Samples()) {
    const FlagSpec* flag = FindFlag(sample.flag);
    REQUIRE(flag != nullptr);
    std::vector<std::vector<std::string>> forms;
    for (const std::string& name :
         {"--" + std::string(sample.flag), "--" + Underscored(sample.flag)}) {
      if (sample.value.empty()) {
        forms.push_back({name});
        forms.push_back({name + "=1"});
      } else {
        forms.push_back({name, sample.value});
        forms.push_back({name + "=" + sample.value});
      }
    }
    if (flag->short_name != 0) {
      const std::string dash_short = std::string("-") + flag->short_name;
      forms.push_back(sample.value.empty() ? std::vector<std::string>{dash_short}
                                           : std::vector<std::string>{dash_short, sample.value});
    }
    for (std::vector<std::string> args : forms) {
      args.insert(args.end(), sample.also.begin(), sample.also.end());
      args.push_back("train.py");
      CheckAccepted({args, {{sample.field, sample.expected}}}, EnvOf({}));
    }
  }
}

TEST_CASE("every flag can be set as PET_<FLAG>") {
  for (const Sample& sample : Samples()) {
    const FlagSpec* flag = FindFlag(sample.flag);
    REQUIRE(flag != nullptr);
    std::vector<std::string> args = sample.also;
    args.push_back("train.py");
    const std::string value = sample.value.empty() ? "1" : sample.value;
    CheckAccepted({args, {{sample.field, sample.expected}}}, EnvOf({{EnvName(*flag), value}}));
  }
}

TEST_CASE("boolean PET_ variables take 1, 0, true and false") {
  CheckAccepted({{"t.py"}, {{"standalone", "true"}}}, EnvOf({{"PET_STANDALONE", "TRUE"}}));
  CheckAccepted({{"t.py"}, {{"standalone", "false"}}}, EnvOf({{"PET_STANDALONE", "0"}}));
  CheckAccepted({{"t.py"}, {{"prefix_output", "true"}}}, EnvOf({{"PET_NO_PREFIX", "false"}}));
  // Off modes do not count against each other.
  CheckAccepted({{"-m", "pkg"}, {{"run_as_module", "true"}}},
                EnvOf({{"PET_NO_PYTHON", "0"}, {"PET_RUN_PATH", "false"}}));
}

TEST_CASE("an empty PET_ variable counts as unset") {
  CheckAccepted({{"t.py"}, {{"min_nodes", "1"}, {"rdzv_id", "none"}}},
                EnvOf({{"PET_NNODES", ""}, {"PET_RDZV_ID", ""}}));
}

TEST_CASE("recovery is auto (in place where it can be) unless asked otherwise") {
  CheckAccepted({{"t.py"}, {{"recovery", "auto"}, {"recover_in_place", "true"}}}, EnvOf({}));
  CheckAccepted(
      {{"--recovery", "restart", "t.py"}, {{"recovery", "restart"}, {"recover_in_place", "false"}}},
      EnvOf({}));
  CheckAccepted(
      {{"--recovery=in-place", "t.py"}, {{"recovery", "in-place"}, {"recover_in_place", "true"}}},
      EnvOf({}));
  CheckAccepted({{"t.py"}, {{"recovery", "restart"}}}, EnvOf({{"PET_RECOVERY", "restart"}}));
}

TEST_CASE("python comes from --python, else MUSTER_PYTHON, else python3") {
  CheckAccepted({{"t.py"}, {{"python", "/env/python"}}}, EnvOf({{"MUSTER_PYTHON", "/env/python"}}));
  CheckAccepted({{"--python", "/cli/python", "t.py"}, {{"python", "/cli/python"}}},
                EnvOf({{"MUSTER_PYTHON", "/env/python"}}));
  CheckAccepted({{"t.py"}, {{"python", "/pet/python"}}},
                EnvOf({{"MUSTER_PYTHON", "/env/python"}, {"PET_PYTHON", "/pet/python"}}));
  CheckAccepted({{"t.py"}, {{"python", "python3"}}}, EnvOf({{"MUSTER_PYTHON", ""}}));
}

TEST_CASE("faults add up over repeated --inject, else MUSTER_INJECT, seeds likewise") {
  const std::string a = "kill-worker,rank=0,step=3";
  const std::string b = "crash-daemon,after=1s";
  CheckAccepted({{"--inject", a, "--inject=" + b, "t.py"}, {{"fault_plan", a + ";" + b}}},
                EnvOf({{"MUSTER_INJECT", "kill-agent,after=1s"}}));
  CheckAccepted({{"t.py"}, {{"fault_plan", a}, {"inject_seed", "5"}}},
                EnvOf({{"MUSTER_INJECT", a}, {"MUSTER_INJECT_SEED", "5"}}));
  CheckAccepted({{"--inject-seed", "6", "t.py"}, {{"fault_plan", a}, {"inject_seed", "6"}}},
                EnvOf({{"MUSTER_INJECT", a}, {"MUSTER_INJECT_SEED", "5"}}));
  // The command line replaces PET_INJECT's specs; it does not add to them.
  CheckAccepted({{"--inject", a, "t.py"}, {{"fault_plan", a}}}, EnvOf({{"PET_INJECT", b}}));
  CheckAccepted({{"t.py"}, {{"fault_plan", "unset"}, {"inject_seed", "0"}}},
                EnvOf({{"MUSTER_INJECT", ""}}));
}

TEST_CASE("the health port comes from --health-port, else TORCHELASTIC_HEALTH_CHECK_PORT") {
  CheckAccepted({{"t.py"}, {{"health_port", "unset"}, {"health_port_origin", ""}}}, EnvOf({}));
  CheckAccepted(
      {{"t.py"},
       {{"health_port", "9000"}, {"health_port_origin", "TORCHELASTIC_HEALTH_CHECK_PORT"}}},
      EnvOf({{"TORCHELASTIC_HEALTH_CHECK_PORT", "9000"}}));
  CheckAccepted({{"--health-port", "0", "t.py"},
                 {{"health_port", "0"}, {"health_port_origin", "--health-port"}}},
                EnvOf({{"TORCHELASTIC_HEALTH_CHECK_PORT", "9000"}}));
  CheckAccepted({{"t.py"}, {{"health_port", "9001"}, {"health_port_origin", "PET_HEALTH_PORT"}}},
                EnvOf({{"TORCHELASTIC_HEALTH_CHECK_PORT", "9000"}, {"PET_HEALTH_PORT", "9001"}}));
  CheckAccepted({{"t.py"}, {{"health_port", "unset"}}},
                EnvOf({{"TORCHELASTIC_HEALTH_CHECK_PORT", ""}}));
}

TEST_CASE("standalone without an id gets a fresh random one") {
  auto first = ParseLaunchCommandLine({"--standalone", "t.py"}, EnvOf({}));
  auto second = ParseLaunchCommandLine({"--standalone", "t.py"}, EnvOf({}));
  REQUIRE(first.options);
  REQUIRE(second.options);
  CHECK(first.options->rdzv_id.size() == 36);
  CHECK(first.options->rdzv_id[14] == '4');
  CHECK(first.options->rdzv_id != second.options->rdzv_id);
}

TEST_CASE("--help and --version print and exit 0") {
  for (const char* help : {"--help", "-h"}) {
    auto outcome = ParseLaunchCommandLine({"--nnodes", "2", help, "--bogus"}, EnvOf({}));
    CHECK_FALSE(outcome.options);
    CHECK(outcome.exit_code == 0);
    CHECK(outcome.text.starts_with("usage: muster [options] SCRIPT [SCRIPT_ARGS...]\n"));
    CHECK(outcome.text.back() != '\n');
  }
  auto version = ParseLaunchCommandLine({"--version"}, EnvOf({}));
  CHECK_FALSE(version.options);
  CHECK(version.exit_code == 0);
  CHECK(version.text == "muster 0.1.0");
}

TEST_CASE("help lists every command-line flag in both spellings with its default") {
  std::string help = ParseLaunchCommandLine({"-h"}, EnvOf({})).text;
  std::size_t longest = 0;
  for (std::size_t start = 0, end; start <= help.size(); start = end + 1) {
    end = std::min(help.find('\n', start), help.size());
    longest = std::max(longest, end - start);
  }
  CHECK(longest <= 80);
  // Undo the wrapping of descriptions so a default can be searched for whole.
  for (std::size_t at; (at = help.find("\n      ")) != std::string::npos;) {
    help.replace(at, 7, 1, ' ');
  }
  for (const FlagSpec& flag : Flags()) {
    if (!(flag.sources & kFromCommandLine)) continue;
    INFO("flag: " << flag.name);
    CHECK(help.find("--" + std::string(flag.name)) != std::string::npos);
    CHECK(help.find("--" + Underscored(flag.name)) != std::string::npos);
    if (!flag.default_text.empty()) {
      CHECK(help.find("Default: " + std::string(flag.default_text)) != std::string::npos);
    }
  }
  CHECK(help.find("-m, --module") != std::string::npos);
  CHECK(help.find("-r, --redirects STD") != std::string::npos);
}

TEST_CASE("parsing a typical command line takes microseconds") {
  const std::vector<std::string> args = {"--nnodes=1:4",
                                         "--nproc_per_node=8",
                                         "--rdzv-backend",
                                         "muster",
                                         "--rdzv-endpoint",
                                         "node0:29400",
                                         "--max-restarts",
                                         "3",
                                         "train.py",
                                         "--lr",
                                         "3"};
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) {
    auto outcome = ParseLaunchCommandLine(args, EnvOf({}));
    REQUIRE(outcome.options);
  }
  const auto per_parse = (std::chrono::steady_clock::now() - start) / 1000;
  // Generous bound (sanitizer builds); a release build takes a few microseconds.
  CHECK(per_parse < std::chrono::milliseconds(1));
}

TEST_CASE("muster launch passes --local_rank unless --use-env, in the spelling asked for") {
  struct Row {
    std::vector<std::string> args;
    std::string local_rank_flag;
  };
  const std::vector<Row> table = {
      {{"--nproc_per_node=2", "train.py"}, "--local_rank"},
      {{"--use_env", "train.py"}, ""},
      {{"--use-env", "--nproc-per-node", "2", "train.py"}, ""},
      {{"--local-rank-arg", "local-rank", "train.py"}, "--local-rank"},
      {{"--local_rank_arg=local_rank", "train.py"}, "--local_rank"},
      // torch.distributed.launch allows an executable with --use-env only.
      {{"--no-python", "--use-env", "./run.sh"}, ""},
  };
  for (const Row& row : table) {
    INFO("args: " << testing::Join(row.args, " "));
    CliOutcome outcome = ParseLaunchCommandLine(row.args, EnvOf({}), CommandMode::kLaunch);
    INFO("text: " << outcome.text);
    REQUIRE(outcome.options.has_value());
    CHECK(outcome.options->local_rank_flag == row.local_rank_flag);
  }
}

TEST_CASE("plain muster never passes a local rank argument") {
  CliOutcome outcome = ParseLaunchCommandLine({"--nproc-per-node", "2", "t.py"}, EnvOf({}));
  REQUIRE(outcome.options.has_value());
  CHECK(outcome.options->local_rank_flag.empty());
}

}  // namespace
}  // namespace muster::cli
