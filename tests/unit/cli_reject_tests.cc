// Command lines muster must reject, each with exactly one error line that
// names the flag and quotes the bad value, and exit code 2.
#include <catch2/catch.hpp>

#include "tests/unit/cli_test_support.h"

namespace muster::cli {
namespace {

using testing::EnvMap;
using testing::EnvOf;

struct Rejected {
  std::vector<std::string> args;
  std::string error;  // the whole line after "muster: error: "
  EnvMap env = {};
};

TEST_CASE("bad command lines are rejected with one line naming the flag and the value") {
  const std::vector<Rejected> table = {
      // Shape of the command line.
      {{}, "missing SCRIPT; usage: muster [options] SCRIPT [SCRIPT_ARGS...] (see --help)"},
      {{"--nnodes", "2"},
       "missing SCRIPT; usage: muster [options] SCRIPT [SCRIPT_ARGS...] (see --help)"},
      {{"--"}, "missing SCRIPT; usage: muster [options] SCRIPT [SCRIPT_ARGS...] (see --help)"},
      {{"--nprocs-per-node", "4", "t.py"},
       "unknown flag '--nprocs-per-node'; did you mean '--nproc-per-node'?"},
      {{"--nproc_per_nde=4", "t.py"},
       "unknown flag '--nproc_per_nde'; did you mean '--nproc_per_node'?"},
      {{"--gpu", "0", "t.py"}, "ambiguous flag '--gpu' could match --gpus, --gpu-visibility"},
      {{"-nproc_per_node", "4", "t.py"},
       "unknown flag '-nproc_per_node'; did you mean '--nproc_per_node'?"},
      {{"--standalnoe", "t.py"}, "unknown flag '--standalnoe'; did you mean '--standalone'?"},
      {{"--frobnicate", "t.py"}, "unknown flag '--frobnicate'"},
      {{"-x", "t.py"}, "unknown flag '-x'"},
      {{"-mx", "t.py"}, "unknown flag '-mx'"},
      {{"--nnodes"}, "--nnodes: missing value (N|MIN:MAX)"},
      {{"--nnodes", "--standalone", "t.py"}, "--nnodes: missing value (N|MIN:MAX)"},
      {{"-r"}, "-r: missing value (STD)"},
      {{"--help=1"}, "--help takes no value"},
      // Nodes.
      {{"--nnodes", "3:2", "t.py"}, "--nnodes: '3:2' has MIN greater than MAX"},
      {{"--nnodes", "0", "t.py"}, "--nnodes: '0' must be N or MIN:MAX with positive integers"},
      {{"--nnodes", "two", "t.py"}, "--nnodes: 'two' must be N or MIN:MAX with positive integers"},
      {{"--nnodes", "1:2:3", "t.py"},
       "--nnodes: '1:2:3' must be N or MIN:MAX with positive integers"},
      {{"--nproc-per-node", "0", "t.py"},
       "--nproc-per-node: '0' must be a positive integer, 'gpu', 'cpu' or 'auto'"},
      {{"--nproc_per_node=xpu", "t.py"},
       "--nproc_per_node: 'xpu' must be a positive integer, 'gpu', 'cpu' or 'auto'"},
      {{"--nproc-per-node", "99999999999", "t.py"},
       "--nproc-per-node: '99999999999' must be a positive integer, 'gpu', 'cpu' or 'auto'"},
      {{"--node-rank", "-1", "t.py"}, "--node-rank: '-1' must be a non-negative integer"},
      {{"--node-rank", "2", "--nnodes", "2", "t.py"},
       "--node-rank: '2' must be less than the maximum node count 2"},
      {{"--node_rank=1", "t.py"}, "--node_rank: '1' must be less than the maximum node count 1"},
      // Fault injection.
      {{"--inject", "kill-worker,step=3", "t.py"},
       "--inject: 'kill-worker,step=3': kill-worker needs a target: rank=N or rank=any"},
      {{"--inject", "kill-worker,rank=0,step=3", "--inject", "nope", "t.py"},
       "--inject: 'nope': unknown fault kind 'nope' (known: kill-worker, hang-worker, "
       "exit-worker, kill-agent, drop-heartbeats, delay-heartbeats, crash-daemon, "
       "corrupt-checkpoint, slow)"},
      {{"t.py"},
       "MUSTER_INJECT: 'exit-worker,rank=0,after=1s': exit-worker fires inside the worker, at a "
       "step: use step=N",
       {{"MUSTER_INJECT", "exit-worker,rank=0,after=1s"}}},
      {{"--inject-seed", "-3", "t.py"}, "--inject-seed: '-3' must be a non-negative integer"},
      {{"--inject", "crash-daemon,after=1s", "t.py"},
       "MUSTER_INJECT_SEED: 'x' must be a non-negative integer",
       {{"MUSTER_INJECT_SEED", "x"}}},
      // The health endpoint.
      {{"--health-port", "70000", "t.py"},
       "--health-port: '70000' must be a port number from 0 to 65535"},
      {{"t.py"},
       "TORCHELASTIC_HEALTH_CHECK_PORT: 'http' must be a port number from 0 to 65535",
       {{"TORCHELASTIC_HEALTH_CHECK_PORT", "http"}}},
      // Rendezvous.
      {{"--rdzv-backend", "etcd", "t.py"},
       "--rdzv-backend: 'etcd' is not supported by muster; the rendezvous backends are "
       "'static', 'c10d' and 'muster'"},
      {{"--rdzv_backend=etcd-v2", "t.py"},
       "--rdzv_backend: 'etcd-v2' is not supported by muster; the rendezvous backends are "
       "'static', 'c10d' and 'muster'"},
      {{"--rdzv-backend", "zookeeper", "t.py"},
       "--rdzv-backend: 'zookeeper' is not a rendezvous backend; use 'static', 'c10d' or "
       "'muster'"},
      {{"--rdzv-endpoint", "host:99999", "t.py"},
       "--rdzv-endpoint: 'host:99999' has a port that is not a number from 0 to 65535"},
      {{"--rdzv-endpoint", "host:", "t.py"},
       "--rdzv-endpoint: 'host:' has a port that is not a number from 0 to 65535"},
      {{"--rdzv-endpoint", ":29400", "t.py"},
       "--rdzv-endpoint: ':29400' must be HOST[:PORT] with a host name or address"},
      {{"--rdzv-endpoint", "::1", "t.py"},
       "--rdzv-endpoint: '::1' has several ':'; write an IPv6 address in brackets, e.g. "
       "'[::1]:29400'"},
      {{"--rdzv-endpoint", "[::1", "t.py"},
       "--rdzv-endpoint: '[::1' has '[' without a closing ']'"},
      {{"--rdzv-conf", "join_timeout=900,timeout", "t.py"},
       "--rdzv-conf: pair 'timeout' is not KEY=VALUE (expected 'key=value,key2=value2')"},
      {{"--rdzv-conf", "=5", "t.py"},
       "--rdzv-conf: pair '=5' is not KEY=VALUE (expected 'key=value,key2=value2')"},
      {{"--rdzv-conf", "a=", "t.py"},
       "--rdzv-conf: pair 'a=' is not KEY=VALUE (expected 'key=value,key2=value2')"},
      {{"--rdzv-id", "", "t.py"}, "--rdzv-id: '' must not be empty"},
      {{"--standalone", "--nnodes", "2", "t.py"},
       "--standalone runs a single node, but --nnodes is '2'"},
      {{"--nnodes=1:2", "t.py"},
       "PET_STANDALONE runs a single node, but --nnodes is '1:2'",
       {{"PET_STANDALONE", "1"}}},
      {{"--standalone=maybe", "t.py"}, "--standalone: 'maybe' must be 1, 0, true or false"},
      {{"--master-port", "65536", "t.py"},
       "--master-port: '65536' must be a port number from 0 to 65535"},
      {{"--master_port=-1", "t.py"}, "--master_port: '-1' must be a port number from 0 to 65535"},
      {{"--master-port", "http", "t.py"},
       "--master-port: 'http' must be a port number from 0 to 65535"},
      {{"--master-addr=", "t.py"}, "--master-addr: '' must not be empty"},
      {{"--store-allow", "10.0.0.0/33", "t.py"},
       "--store-allow: '10.0.0.0/33' is not a CIDR (ADDRESS/BITS, BITS at most 32 for IPv4)"},
      {{"--store-allow=10.0.0.0/8,node2", "t.py"},
       "--store-allow: 'node2' is not a CIDR (ADDRESS/BITS with an IPv4 or IPv6 ADDRESS)"},
      {{"t.py"},
       "PET_STORE_ALLOW: empty entry in '10.0.0.0/8,' (expected CIDR,CIDR,..., e.g. 10.0.0.0/8)",
       {{"PET_STORE_ALLOW", "10.0.0.0/8,"}}},
      {{"--store-max-keys", "0", "t.py"},
       "--store-max-keys: '0' must be a whole number from 1 to 2^53"},
      {{"--store-max-connections", "many", "t.py"},
       "--store-max-connections: 'many' must be a whole number from 1 to 2^53"},
      {{"--store-max-bytes", "1T", "t.py"},
       "--store-max-bytes: '1T' must be a size in bytes from 1 to 2^53, optionally with K, M or G "
       "(powers of 1024), e.g. 512M"},
      {{"--store-max-bytes", "9999999999G", "t.py"},
       "--store-max-bytes: '9999999999G' must be a size in bytes from 1 to 2^53, optionally with "
       "K, "
       "M or G (powers of 1024), e.g. 512M"},
      // Workers.
      {{"--max-restarts", "-1", "t.py"}, "--max-restarts: '-1' must be a non-negative integer"},
      {{"--max_restarts", "3.5", "t.py"}, "--max_restarts: '3.5' must be a non-negative integer"},
      {{"--max-restarts", " 3", "t.py"}, "--max-restarts: ' 3' must be a non-negative integer"},
      {{"--monitor-interval", "0", "t.py"},
       "--monitor-interval: '0' must be a number of seconds greater than 0"},
      {{"--monitor-interval", "nan", "t.py"},
       "--monitor-interval: 'nan' must be a number of seconds greater than 0"},
      {{"--monitor-interval", "1s", "t.py"},
       "--monitor-interval: '1s' must be a number of seconds greater than 0"},
      {{"--shutdown-timeout", "-5", "t.py"},
       "--shutdown-timeout: '-5' must be a number of seconds >= 0"},
      {{"--shutdown_timeout", "inf", "t.py"},
       "--shutdown_timeout: 'inf' must be a number of seconds >= 0"},
      {{"--start-method", "thread", "t.py"},
       "--start-method: 'thread' must be 'spawn', 'fork' or 'forkserver'"},
      {{"--role=", "t.py"}, "--role: '' must not be empty"},
      {{"--python", "", "t.py"}, "--python: '' must not be empty"},
      {{"-m", "--no-python", "t.py"}, "-m and --no-python cannot be used together"},
      {{"--no_python", "--run_path", "t.py"}, "--no_python and --run_path cannot be used together"},
      {{"--module", "--run-path", "t.py"}, "--module and --run-path cannot be used together"},
      {{"--run-path", "t.py"},
       "PET_MODULE and --run-path cannot be used together",
       {{"PET_MODULE", "true"}}},
      // Output.
      {{"--redirects", "4", "t.py"},
       "--redirects: '4' must be 0-3 (0 none, 1 stdout, 2 stderr, 3 both) or LOCAL_RANK:MASK "
       "pairs like '0:1,1:2'"},
      {{"-t", "0:1,1", "t.py"},
       "-t: '0:1,1' must be 0-3 (0 none, 1 stdout, 2 stderr, 3 both) or LOCAL_RANK:MASK pairs "
       "like '0:1,1:2'"},
      {{"--tee", "0:1,", "t.py"},
       "--tee: '0:1,' must be 0-3 (0 none, 1 stdout, 2 stderr, 3 both) or LOCAL_RANK:MASK "
       "pairs like '0:1,1:2'"},
      {{"-r0:1,0:2", "t.py"}, "-r: '0:1,0:2' sets local rank 0 twice"},
      {{"--local-ranks-filter", "0,a", "t.py"},
       "--local-ranks-filter: '0,a' must be local ranks like '0,2'; 'a' is not a non-negative "
       "integer"},
      {{"--local_ranks_filter", "0,,2", "t.py"}, "--local_ranks_filter: '0,,2' has an empty item"},
      {{"--duplicate-stdout-filters", "loss,", "t.py"},
       "--duplicate-stdout-filters: 'loss,' has an empty filter, which would match every line"},
      {{"--duplicate_stderr_filters", ",x", "t.py"},
       "--duplicate_stderr_filters: ',x' has an empty filter, which would match every line"},
      // GPUs.
      {{"--gpus", "0,,1", "t.py"}, "--gpus: '0,,1' has an empty item"},
      {{"--gpus", "", "t.py"}, "--gpus: '' must list GPU ids, e.g. '0,1' or 'GPU-<uuid>'"},
      {{"--gpus", "0,cuda:1", "t.py"},
       "--gpus: '0,cuda:1' has 'cuda:1', which is neither a GPU index nor a GPU-/MIG- UUID"},
      {{"--gpus", "-1", "t.py"},
       "--gpus: '-1' has '-1', which is neither a GPU index nor a GPU-/MIG- UUID"},
      {{"--gpus", "GPU-", "t.py"},
       "--gpus: 'GPU-' has 'GPU-', which is neither a GPU index nor a GPU-/MIG- UUID"},
      {{"--gpus", "1,0,1", "t.py"}, "--gpus: '1,0,1' lists GPU '1' twice"},
      {{"--gpu-visibility", "none", "t.py"}, "--gpu-visibility: 'none' must be 'all' or 'isolate'"},
      {{"--virtual-local-rank", "--gpu-visibility", "all", "t.py"},
       "--virtual-local-rank and --gpu-visibility all cannot be used together: each worker sees "
       "only its own GPU"},
      {{"--virtual_local_rank=maybe", "t.py"},
       "--virtual_local_rank: 'maybe' must be 1, 0, true or false"},
      // `muster launch` flags.
      {{"--use-env", "t.py"},
       "--use-env: only `muster launch` takes it; muster tells workers their local rank in "
       "LOCAL_RANK"},
      {{"--local_rank_arg", "local-rank", "t.py"},
       "--local_rank_arg: only `muster launch` takes it; muster tells workers their local rank "
       "in LOCAL_RANK"},
      // Compatibility flags.
      {{"--numa-binding", "cores", "t.py"},
       "--numa-binding: 'cores' must be 'node', 'socket', 'exclusive' or 'core-complex'"},
      {{"--warm-import", "numpy,torch..nn", "t.py"},
       "--warm-import: 'numpy,torch..nn' has 'torch..nn', which is not a Python module name (e.g. "
       "torch.distributed)"},
      {{"--warm-import", "1up", "t.py"},
       "--warm-import: '1up' has '1up', which is not a Python module name (e.g. "
       "torch.distributed)"},
      {{"--signals-to-handle", "SIGTERM,SIGKILL", "t.py"},
       "--signals-to-handle: 'SIGTERM,SIGKILL' has 'SIGKILL', which is not a signal muster can "
       "forward (e.g. SIGTERM, SIGUSR1)"},
      // PET_ variables are named in their errors.
      {{"t.py"},
       "PET_NPROC_PER_NODE: '0' must be a positive integer, 'gpu', 'cpu' or 'auto'",
       {{"PET_NPROC_PER_NODE", "0"}}},
      {{"t.py"}, "PET_STANDALONE: 'yes' must be 1, 0, true or false", {{"PET_STANDALONE", "yes"}}},
      // Values stay on one line whatever they hold.
      {{"--nnodes", "1\n2", "t.py"},
       "--nnodes: '1\\n2' must be N or MIN:MAX with positive integers"},
      // A missing config file.
      {{"--config", "/nonexistent/muster.json", "t.py"},
       "--config: cannot read '/nonexistent/muster.json': No such file or directory"},
      {{"--config=", "t.py"}, "--config: '' must not be empty"},
  };
  for (const Rejected& row : table) {
    INFO("args: " << testing::Join(row.args, " "));
    CliOutcome outcome = ParseLaunchCommandLine(row.args, EnvOf(row.env));
    CHECK_FALSE(outcome.options);
    CHECK(outcome.exit_code == 2);
    CHECK(outcome.text == "muster: error: " + row.error);
    CHECK(outcome.text.find('\n') == std::string::npos);
  }
}

TEST_CASE("bad muster launch command lines are rejected as torch.distributed.launch does") {
  const std::vector<Rejected> table = {
      {{"--nproc-per-node", "2"},
       "missing SCRIPT; usage: muster launch [options] [--use-env] SCRIPT [SCRIPT_ARGS...] (see "
       "muster launch --help)"},
      {{"--no_python", "./run.sh"}, "--no_python needs --use-env with `muster launch`"},
      {{"--use_env", "--local-rank-arg", "local-rank", "t.py"},
       "--use_env and --local-rank-arg cannot be used together: --use-env passes no argument"},
      {{"--local-rank-arg", "rank", "t.py"},
       "--local-rank-arg: 'rank' must be 'local_rank' or 'local-rank'"},
  };
  for (const Rejected& row : table) {
    INFO("args: " << testing::Join(row.args, " "));
    CliOutcome outcome = ParseLaunchCommandLine(row.args, EnvOf(row.env), CommandMode::kLaunch);
    CHECK_FALSE(outcome.options);
    CHECK(outcome.exit_code == 2);
    CHECK(outcome.text == "muster: error: " + row.error);
  }
}

TEST_CASE("muster launch's own flags are read from the command line only, as in torch") {
  CliOutcome outcome =
      ParseLaunchCommandLine({"t.py"}, EnvOf({{"PET_USE_ENV", "1"}}), CommandMode::kLaunch);
  REQUIRE(outcome.options);
  CHECK(outcome.options->local_rank_flag == "--local_rank");
}

TEST_CASE("a bad value that a higher-precedence source overrides is not an error") {
  auto outcome = ParseLaunchCommandLine({"--nproc-per-node", "2", "t.py"},
                                        EnvOf({{"PET_NPROC_PER_NODE", "zero"}}));
  REQUIRE(outcome.options);
  CHECK(outcome.options->nproc_per_node.count == 2);
}

}  // namespace
}  // namespace muster::cli
