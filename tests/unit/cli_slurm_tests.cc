// SLURM as the lowest-precedence source of muster's flags: what an srun step
// derives, what every user-written source overrides, and the errors.
#include <catch2/catch.hpp>

#include "launcher/cli/slurm_source.h"
#include "tests/unit/cli_test_support.h"

namespace muster::cli {
namespace {

using testing::EnvMap;
using testing::EnvOf;
using testing::Fields;

// The variables srun sets in a task of `srun -N3 --ntasks-per-node=1` (job
// 1234, step 0), on the node with SLURM_NODEID `node_id`.
EnvMap StepEnv(const std::string& node_id) {
  return {{"SLURM_JOB_ID", "1234"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_NODEID", node_id},
          {"SLURM_NNODES", "3"},
          {"SLURM_STEP_NUM_NODES", "3"},
          {"SLURM_STEP_NUM_TASKS", "3"},
          {"SLURM_NTASKS", "3"},
          {"SLURM_JOB_NODELIST", "gpu[001-004]"},
          {"SLURM_STEP_NODELIST", "gpu[002-004]"}};
}

EnvMap With(EnvMap env, const EnvMap& more) {
  for (const auto& [k, v] : more) env[k] = v;
  return env;
}

std::map<std::string, std::string> Parsed(const std::vector<std::string>& args, const EnvMap& env) {
  CliOutcome outcome = ParseLaunchCommandLine(args, EnvOf(env));
  INFO("text: " << outcome.text);
  REQUIRE(outcome.options.has_value());
  return Fields(*outcome.options, outcome.extras);
}

std::string SlurmRejected(const std::vector<std::string>& args, const EnvMap& env) {
  CliOutcome outcome = ParseLaunchCommandLine(args, EnvOf(env));
  REQUIRE_FALSE(outcome.options.has_value());
  CHECK(outcome.exit_code == 2);
  return outcome.text;
}

const std::string kEndpoint = "gpu002:" + std::to_string(SlurmRendezvousPort(1234, 0));

TEST_CASE("an srun step derives nodes, node rank, the rendezvous and the run id") {
  auto f = Parsed({"train.py"}, StepEnv("1"));
  CHECK(f["min_nodes"] == "3");
  CHECK(f["max_nodes"] == "3");
  CHECK(f["node_rank"] == "1");
  CHECK(f["rdzv_backend"] == "muster");
  CHECK(f["rdzv_endpoint"] == kEndpoint);  // the first host of the STEP's node list
  CHECK(f["rdzv_id"] == "1234.0");
  CHECK(f["rdzv_conf"] == "is_host=0");
  CHECK(f["nproc_per_node"] == "1");  // no GPU named anywhere

  CHECK(Parsed({"train.py"}, StepEnv("0"))["rdzv_conf"] == "is_host=1");
}

TEST_CASE("without a step node list the job's is used") {
  auto env = StepEnv("0");
  env.erase("SLURM_STEP_NODELIST");
  CHECK(Parsed({"train.py"}, env)["rdzv_endpoint"] ==
        "gpu001:" + std::to_string(SlurmRendezvousPort(1234, 0)));
}

TEST_CASE("GPUs named by SLURM or CUDA_VISIBLE_DEVICES make one worker per GPU") {
  CHECK(Parsed({"train.py"}, With(StepEnv("0"), {{"SLURM_STEP_GPUS", "2,3"}}))["nproc_per_node"] ==
        "gpu");
  CHECK(Parsed({"train.py"},
               With(StepEnv("0"), {{"CUDA_VISIBLE_DEVICES", "0,1"}}))["nproc_per_node"] == "gpu");
  // An empty CUDA_VISIBLE_DEVICES hides every GPU, as CUDA reads it.
  CHECK(Parsed({"train.py"}, With(StepEnv("0"), {{"CUDA_VISIBLE_DEVICES", ""},
                                                 {"SLURM_STEP_GPUS", "0"}}))["nproc_per_node"] ==
        "1");
}

TEST_CASE("every source the user writes wins over SLURM") {
  auto f = Parsed({"--nnodes", "2:3", "--nproc-per-node", "4", "--rdzv-id", "mine", "--rdzv-conf",
                   "join_timeout=9", "train.py"},
                  With(StepEnv("0"), {{"SLURM_STEP_GPUS", "0,1"}}));
  CHECK(f["min_nodes"] == "2");
  CHECK(f["max_nodes"] == "3");
  CHECK(f["nproc_per_node"] == "4");
  CHECK(f["rdzv_id"] == "mine");
  CHECK(f["rdzv_endpoint"] == kEndpoint);
  CHECK(f["rdzv_conf"] == "is_host=1,join_timeout=9");  // is_host still derived

  CHECK(Parsed({"train.py"}, With(StepEnv("0"), {{"PET_NNODES", "1:3"}}))["min_nodes"] == "1");

  testing::TempFile config(R"({"rdzv_id": "from-file", "node_rank": 2})");
  auto from_file = Parsed({"--config", config.path(), "train.py"}, StepEnv("0"));
  CHECK(from_file["rdzv_id"] == "from-file");
  CHECK(from_file["node_rank"] == "2");
}

TEST_CASE("a user-given endpoint or rendezvous host setting is not overridden") {
  auto own_daemon = Parsed({"--rdzv-endpoint", "head:29400", "train.py"}, StepEnv("0"));
  CHECK(own_daemon["rdzv_endpoint"] == "head:29400");
  CHECK(own_daemon["rdzv_conf"] == "");  // that daemon runs elsewhere

  CHECK(Parsed({"--rdzv-conf", "is_host=0", "train.py"}, StepEnv("0"))["rdzv_conf"] == "is_host=0");
}

TEST_CASE("a master address asks for torchrun's static setup, with SLURM's node rank") {
  auto f = Parsed({"--master-addr", "gpu002", "--master-port", "29511", "train.py"}, StepEnv("2"));
  CHECK(f["rdzv_backend"] == "static");
  CHECK(f["rdzv_endpoint"] == "");
  CHECK(f["node_rank"] == "2");
  CHECK(f["max_nodes"] == "3");
  CHECK(f["rdzv_conf"] == "");
}

TEST_CASE("SLURM is ignored with --slurm off, --standalone, or outside a step") {
  auto off = Parsed({"--slurm", "off", "train.py"}, StepEnv("1"));
  CHECK(off["max_nodes"] == "1");
  CHECK(off["rdzv_backend"] == "static");
  CHECK(Parsed({"train.py"}, With(StepEnv("1"), {{"PET_SLURM", "off"}}))["max_nodes"] == "1");

  auto standalone = Parsed({"--standalone", "train.py"}, StepEnv("1"));
  CHECK(standalone["max_nodes"] == "1");
  CHECK(standalone["rdzv_endpoint"] == "localhost:0");

  auto batch_script = StepEnv("0");
  batch_script.erase("SLURM_STEP_ID");
  CHECK(Parsed({"train.py"}, batch_script)["max_nodes"] == "1");
  CHECK(Parsed({"train.py"}, With(StepEnv("0"), {{"SLURM_STEP_ID", "4294967294"}}))["max_nodes"] ==
        "1");
}

TEST_CASE("bad SLURM variables are named in one error line") {
  CHECK_THAT(
      SlurmRejected({"train.py"}, With(StepEnv("0"), {{"SLURM_STEP_NUM_TASKS", "6"}})),
      Catch::Contains("srun started 6 tasks on 3 nodes") && Catch::Contains("--ntasks-per-node=1"));
  CHECK_THAT(SlurmRejected({"train.py"}, StepEnv("x")), Catch::Contains("SLURM_NODEID='x'"));
  CHECK_THAT(SlurmRejected({"train.py"}, StepEnv("3")),
             Catch::Contains("SLURM_NODEID: '3' must be less than the maximum node count 3"));
  CHECK_THAT(SlurmRejected({"train.py"}, With(StepEnv("0"), {{"SLURM_STEP_NODELIST", "n[3-1]"}})),
             Catch::Contains("SLURM_STEP_NODELIST") && Catch::Contains("n[3-1]"));
  CHECK_THAT(SlurmRejected({"train.py"}, With(StepEnv("0"), {{"SLURM_JOB_ID", "12a"}})),
             Catch::Contains("SLURM_JOB_ID='12a'"));
  CHECK_THAT(SlurmRejected({"train.py"}, With(StepEnv("0"), {{"SLURM_STEP_NUM_NODES", "abc"},
                                                             {"SLURM_STEP_NUM_TASKS", "abc"}})),
             Catch::Contains("SLURM_STEP_NUM_NODES: 'abc'"));
  CHECK_THAT(SlurmRejected({"--slurm", "maybe", "train.py"}, StepEnv("0")),
             Catch::Contains("--slurm: 'maybe'"));
}

TEST_CASE("the rendezvous port is stable per step and differs between steps and jobs") {
  CHECK(SlurmRendezvousPort(1234, 0) == SlurmRendezvousPort(1234, 0));
  CHECK(SlurmRendezvousPort(1234, 0) != SlurmRendezvousPort(1234, 1));
  CHECK(SlurmRendezvousPort(1234, 0) != SlurmRendezvousPort(1235, 0));
  for (uint64_t job : {0ULL, 1ULL, 12767ULL, 12768ULL, 123456789ULL, ~0ULL}) {
    for (uint64_t step : {0ULL, 63ULL, 64ULL, 1000ULL}) {
      const int port = SlurmRendezvousPort(job, step);
      CHECK(port >= 20000);
      CHECK(port <= 32767);
    }
  }
}

}  // namespace
}  // namespace muster::cli
