#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "tests/unit/launcher_test_support.h"

#include "launcher/plan/launch_plan.h"

using namespace muster;
using muster::testing::EnvOf;

namespace {

MachineFacts Machine(std::vector<std::string> gpus, int cores) {
  MachineFacts m;
  m.discover_gpus = [gpus] { return gpus; };
  m.cpu_count = cores;
  m.find_executable = [](const std::string& name) -> std::optional<std::string> {
    if (name == "missing") return std::nullopt;
    return name.front() == '/' ? name : "/usr/bin/" + name;
  };
  return m;
}

LaunchOptions Script(std::string script) {
  LaunchOptions o;
  o.python = "python3";
  o.script = std::move(script);
  o.script_args = {"--lr", "0.1"};
  return o;
}
}  // namespace

TEST_CASE("nproc 'gpu' counts GPU ids and fails clearly without any", "[plan]") {
  auto o = Script("train.py");
  o.nproc_per_node.kind = ProcsPerNode::Kind::kGpu;
  auto plan = MakeLaunchPlan(o, EnvOf({}), Machine({"0", "1", "2"}, 8));
  REQUIRE(plan.ok());
  CHECK(plan->nproc_per_node == 3);

  auto none = MakeLaunchPlan(o, EnvOf({}), Machine({}, 8));
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message().find("--nproc-per-node: 'gpu'") == 0);
}

TEST_CASE("nproc 'cpu' counts cores and 'auto' prefers GPUs", "[plan]") {
  auto o = Script("train.py");
  o.nproc_per_node.kind = ProcsPerNode::Kind::kCpu;
  CHECK(MakeLaunchPlan(o, EnvOf({}), Machine({"0"}, 6))->nproc_per_node == 6);
  o.nproc_per_node.kind = ProcsPerNode::Kind::kAuto;
  CHECK(MakeLaunchPlan(o, EnvOf({}), Machine({"0"}, 6))->nproc_per_node == 1);
  CHECK(MakeLaunchPlan(o, EnvOf({}), Machine({}, 6))->nproc_per_node == 6);
}

TEST_CASE("the worker command line matches torchrun's for each script mode", "[plan]") {
  auto o = Script("train.py");
  CHECK(MakeLaunchPlan(o, EnvOf({}), Machine({}, 1))->argv ==
        std::vector<std::string>{"python3", "-u", "train.py", "--lr", "0.1"});
  o.run_as_module = true;
  CHECK(MakeLaunchPlan(o, EnvOf({}), Machine({}, 1))->argv ==
        std::vector<std::string>{"python3", "-u", "-m", "train.py", "--lr", "0.1"});
  o.run_as_module = false;
  o.no_python = true;
  o.script = "/bin/true";
  auto plan = MakeLaunchPlan(o, EnvOf({}), Machine({}, 1));
  CHECK(plan->executable == "/bin/true");
  CHECK(plan->argv == std::vector<std::string>{"/bin/true", "--lr", "0.1"});
}

TEST_CASE("an interpreter or executable that is not found is named in the error", "[plan]") {
  auto o = Script("train.py");
  o.python = "missing";
  auto plan = MakeLaunchPlan(o, EnvOf({}), Machine({}, 1));
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().message().find("--python: 'missing'") == 0);
}

TEST_CASE("more isolated workers than GPUs share them with a warning", "[plan]") {
  auto o = Script("train.py");
  o.nproc_per_node.count = 4;
  o.gpu_visibility = GpuVisibility::kIsolate;
  auto plan = MakeLaunchPlan(o, EnvOf({{"CUDA_VISIBLE_DEVICES", "0,1"}}), Machine({}, 1));
  REQUIRE(plan.ok());
  REQUIRE(plan->warnings.size() == 1);
  CHECK(plan->warnings[0].find("round-robin") != std::string::npos);
}

TEST_CASE("by default every worker sees the whole list and LOCAL_RANK picks its GPU", "[plan]") {
  auto o = Script("train.py");
  o.gpus = std::vector<std::string>{"0", "1", "2"};
  o.nproc_per_node.count = 3;
  auto plan = MakeLaunchPlan(o, EnvOf({}), Machine({}, 1));
  REQUIRE(plan.ok());
  CHECK(plan->warnings.empty());
  std::set<std::string> own;
  for (int lr = 0; lr < 3; ++lr) {
    const WorkerLaunch w = PlanWorker(*plan, lr);
    REQUIRE(w.cuda_visible_devices == "0,1,2");
    CHECK_FALSE(w.virtual_local_rank);
    own.insert(SplitGpuList(*w.cuda_visible_devices).at(static_cast<size_t>(lr)));
  }
  CHECK(own.size() == 3);  // torch.cuda.set_device(LOCAL_RANK) gives each its own GPU
}

TEST_CASE("isolate shows each worker one GPU while LOCAL_RANK stays", "[plan]") {
  auto o = Script("train.py");
  o.gpus = std::vector<std::string>{"4", "5", "6"};
  o.nproc_per_node.count = 3;
  o.gpu_visibility = GpuVisibility::kIsolate;
  auto plan = MakeLaunchPlan(o, EnvOf({}), Machine({}, 1));
  REQUIRE(plan.ok());
  CHECK(PlanWorker(*plan, 1).cuda_visible_devices == "5");
  CHECK_FALSE(PlanWorker(*plan, 1).virtual_local_rank);
}

TEST_CASE("a virtual local rank sees only its own GPU and is told LOCAL_RANK 0", "[plan]") {
  auto o = Script("train.py");
  o.nproc_per_node.count = 3;
  o.virtual_local_rank = true;
  // The SLURM step's GPUs, as torchrun maps local ranks through CUDA_VISIBLE_DEVICES.
  auto plan = MakeLaunchPlan(o, EnvOf({{"SLURM_STEP_GPUS", "3,5,7"}}), Machine({}, 1));
  REQUIRE(plan.ok());
  for (int lr = 0; lr < 3; ++lr) {
    const WorkerLaunch w = PlanWorker(*plan, lr);
    CHECK(w.cuda_visible_devices == std::to_string(3 + 2 * lr));
    CHECK(w.virtual_local_rank);
  }
}

TEST_CASE("a virtual local rank without a GPU of its own is an error", "[plan]") {
  auto o = Script("train.py");
  o.nproc_per_node.count = 3;
  o.virtual_local_rank = true;
  o.gpus = std::vector<std::string>{"0", "1"};
  auto plan = MakeLaunchPlan(o, EnvOf({}), Machine({}, 1));
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().message() ==
        "--virtual-local-rank: 3 workers per node but 2 GPU ids (from --gpus); each worker needs "
        "a GPU of its own");
}

TEST_CASE("with no GPU ids known a virtual local rank names its GPU by number, as torchrun",
          "[plan]") {
  auto o = Script("train.py");
  o.nproc_per_node.count = 2;
  o.virtual_local_rank = true;
  auto plan = MakeLaunchPlan(o, EnvOf({}), Machine({}, 1));
  REQUIRE(plan.ok());
  CHECK(PlanWorker(*plan, 1).cuda_visible_devices == "1");
  o.virtual_local_rank = false;
  plan = MakeLaunchPlan(o, EnvOf({}), Machine({}, 1));
  CHECK_FALSE(PlanWorker(*plan, 1).cuda_visible_devices.has_value());  // inherited
}

TEST_CASE("more workers than GPUs in the default visibility warn which have none", "[plan]") {
  auto o = Script("train.py");
  o.nproc_per_node.count = 3;
  auto plan = MakeLaunchPlan(o, EnvOf({{"CUDA_VISIBLE_DEVICES", "0,1"}}), Machine({}, 1));
  REQUIRE(plan.ok());
  REQUIRE(plan->warnings.size() == 1);
  CHECK(plan->warnings[0] ==
        "3 workers per node but 2 GPU ids (from CUDA_VISIBLE_DEVICES): workers with LOCAL_RANK "
        ">= 2 have no GPU at index LOCAL_RANK of CUDA_VISIBLE_DEVICES");
}

TEST_CASE("a list of MIG instances for every worker warns that CUDA shows only one", "[plan]") {
  auto o = Script("train.py");
  o.gpus = std::vector<std::string>{"MIG-aaaa", "MIG-bbbb"};
  o.nproc_per_node.count = 2;
  auto plan = MakeLaunchPlan(o, EnvOf({}), Machine({}, 1));
  REQUIRE(plan->warnings.size() == 1);
  CHECK(plan->warnings[0].find("one MIG instance") != std::string::npos);
  o.gpu_visibility = GpuVisibility::kIsolate;
  CHECK(MakeLaunchPlan(o, EnvOf({}), Machine({}, 1))->warnings.empty());
}

TEST_CASE("duplicate filters without a tee'd stream warn that nothing is copied", "[plan]") {
  auto o = Script("train.py");
  o.nproc_per_node.count = 2;
  o.duplicate_stderr_filters = {"Traceback"};
  auto plan = MakeLaunchPlan(o, EnvOf({}), Machine({}, 1));
  REQUIRE(plan->warnings.size() == 1);
  CHECK(plan->warnings[0] ==
        "--duplicate-stderr-filters: no local rank tees its stderr to the console (--tee), so "
        "filtered_stderr.log stays empty");
  o.tee.per_rank[1] = kStdErr;
  CHECK(MakeLaunchPlan(o, EnvOf({}), Machine({}, 1))->warnings.empty());
  o.local_ranks_filter = std::vector<int>{0};  // rank 1 is not shown: not tailed, not copied
  CHECK(MakeLaunchPlan(o, EnvOf({}), Machine({}, 1))->warnings.size() == 1);
}

TEST_CASE("static rendezvous puts node ranks in order and node 0 hosts the store", "[plan]") {
  LaunchOptions o = Script("train.py");
  o.min_nodes = o.max_nodes = 2;
  o.node_rank = 1;
  o.master_addr = "10.1.1.1";
  auto a = StaticAssignment(o, 4);
  REQUIRE(a.ok());
  CHECK(a->global_rank_offset == 4);
  CHECK(a->world_size == 8);
  CHECK(a->master_port == 29500);
  CHECK(a->group_rank == 1);  // node 1 of 2: node 0 hosts the store
  CHECK(a->group_world_size == 2);
  CHECK(a->local_world_size == 4);
}

TEST_CASE("the static endpoint flag overrides master address and port", "[plan]") {
  LaunchOptions o = Script("train.py");
  o.min_nodes = o.max_nodes = 2;
  o.rdzv_endpoint = "node0:1234";
  auto a = StaticAssignment(o, 1);
  CHECK(a->master_addr == "node0");
  CHECK(a->master_port == 1234);
  CHECK(a->group_rank == 0);  // node 0 hosts the store
}

TEST_CASE("a one-node job binds loopback on any port", "[plan]") {
  LaunchOptions o = Script("train.py");
  o.rdzv_backend = "c10d";  // one node, no endpoint named: nothing to meet
  // main() runs a one-node c10d job without the elastic rendezvous...
  auto config = MakeElasticConfig(o);
  REQUIRE(config.ok());
  CHECK_FALSE(config->has_value());
  // ...with this static assignment.
  auto a = StaticAssignment(o, 3);
  REQUIRE(a.ok());
  CHECK(a->master_addr == "127.0.0.1");
  CHECK(a->master_port == 0);
  CHECK(a->world_size == 3);
}

TEST_CASE("one node with a rendezvous named uses it, as torchrun does", "[plan]") {
  for (const std::string backend : {"c10d", "muster"}) {
    LaunchOptions o = Script("train.py");
    o.rdzv_backend = backend;
    o.rdzv_endpoint = "head:29400";
    INFO("--rdzv-backend " << backend);
    auto config = MakeElasticConfig(o);
    REQUIRE(config.ok());
    REQUIRE(config->has_value());
    CHECK((*config)->host == "head");
    CHECK((*config)->port == 29400);
    CHECK_FALSE((*config)->is_host);
  }
  // --standalone keeps its embedded rendezvous.
  LaunchOptions o = Script("train.py");
  o.standalone = true;
  o.rdzv_backend = "c10d";
  auto config = MakeElasticConfig(o);
  REQUIRE(config.ok());
  REQUIRE(config->has_value());
  CHECK((*config)->is_host);
}

TEST_CASE("standalone embeds the rendezvous on loopback on any port", "[plan]") {
  LaunchOptions o = Script("train.py");
  o.standalone = true;
  o.rdzv_backend = "c10d";
  auto config = MakeElasticConfig(o);
  REQUIRE(config.ok());
  REQUIRE(config->has_value());
  CHECK((*config)->host == "127.0.0.1");
  CHECK((*config)->port == 0);
  CHECK((*config)->is_host);
  CHECK((*config)->loopback_only);
}

TEST_CASE("a node range with the static backend points to the elastic rendezvous", "[plan]") {
  LaunchOptions o = Script("train.py");
  o.min_nodes = 1;
  o.max_nodes = 2;
  auto r = StaticAssignment(o, 1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("--nnodes: '1:2'") == 0);
  CHECK(r.status().message().find("--rdzv-backend c10d") != std::string::npos);
}

TEST_CASE("the elastic endpoint is split once, with the default port and IPv6", "[plan]") {
  LaunchOptions o = Script("train.py");
  o.rdzv_backend = "c10d";
  o.min_nodes = 2;
  o.max_nodes = 4;
  o.rdzv_endpoint = "[::1]";
  auto config = MakeElasticConfig(o);
  REQUIRE(config.ok());
  CHECK((*config)->host == "::1");
  CHECK((*config)->port == kDefaultRendezvousPort);
  o.rdzv_endpoint = "head:0";
  auto zero = MakeElasticConfig(o);
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.status().message().find("'head:0' needs a fixed port") != std::string::npos);
}

TEST_CASE("the PATH search passes over directories, as execvp does", "[plan]") {
  // One directory per process: several build trees may run their tests at once.
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("muster_path_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "a" / "prog");  // a directory named like the program
  std::filesystem::create_directories(root / "b");
  {
    std::ofstream program(root / "b" / "prog");
    program << "#!/bin/sh\n";
  }
  std::filesystem::permissions(root / "b" / "prog", std::filesystem::perms::owner_all);
  const std::string path_var = (root / "a").string() + ":" + (root / "b").string();
  CHECK(FindExecutable("prog", path_var) == (root / "b" / "prog").string());
  CHECK_FALSE(FindExecutable((root / "a" / "prog").string(), path_var));
  std::filesystem::remove_all(root);
}
