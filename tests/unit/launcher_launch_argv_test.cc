// `muster launch`: each worker's command line carries its local rank as
// torch.distributed.launch passes it, right after SCRIPT.
#include <catch2/catch.hpp>

#include "launcher/plan/launch_plan.h"
#include "tests/unit/launcher_test_support.h"

using namespace muster;
using muster::testing::EnvOf;

namespace {

MachineFacts AnyMachine() {
  MachineFacts m;
  m.discover_gpus = [] { return std::vector<std::string>{}; };
  m.find_executable = [](const std::string& name) -> std::optional<std::string> {
    return name.front() == '/' ? name : "/usr/bin/" + name;
  };
  return m;
}

LaunchPlan PlanFor(LaunchOptions o) {
  o.python = "python3";
  o.nproc_per_node.count = 2;
  auto plan = MakeLaunchPlan(o, EnvOf({}), AnyMachine());
  REQUIRE(plan.ok());
  return *plan;
}

LaunchOptions Launch(std::string flag) {
  LaunchOptions o;
  o.script = "DDP_main.py";
  o.script_args = {"--epochs", "3"};
  o.local_rank_flag = std::move(flag);
  return o;
}

}  // namespace

TEST_CASE("launch puts --local_rank=N between the script and its arguments", "[launch]") {
  const LaunchPlan plan = PlanFor(Launch("--local_rank"));
  CHECK(PlanWorker(plan, 0).argv == std::vector<std::string>{"python3", "-u", "DDP_main.py",
                                                             "--local_rank=0", "--epochs", "3"});
  CHECK(PlanWorker(plan, 1).argv == std::vector<std::string>{"python3", "-u", "DDP_main.py",
                                                             "--local_rank=1", "--epochs", "3"});
  // The plan's own argv, shared by all workers, is left as it was.
  CHECK(plan.argv == std::vector<std::string>{"python3", "-u", "DDP_main.py", "--epochs", "3"});
}

TEST_CASE("launch spells the argument as torch 2.x when asked", "[launch]") {
  CHECK(PlanWorker(PlanFor(Launch("--local-rank")), 1).argv[3] == "--local-rank=1");
}

TEST_CASE("launch with --use-env, and plain muster, pass no local rank argument", "[launch]") {
  const LaunchPlan plan = PlanFor(Launch(""));
  CHECK(PlanWorker(plan, 1).argv == plan.argv);
}

TEST_CASE("launch puts the local rank after the module or run-path script too", "[launch]") {
  LaunchOptions module = Launch("--local_rank");
  module.run_as_module = true;
  CHECK(PlanWorker(PlanFor(module), 1).argv ==
        std::vector<std::string>{"python3", "-u", "-m", "DDP_main.py", "--local_rank=1", "--epochs",
                                 "3"});
  LaunchOptions run_path = Launch("--local_rank");
  run_path.run_path = true;
  const auto argv = PlanWorker(PlanFor(run_path), 0).argv;
  REQUIRE(argv.size() == 8);
  CHECK(argv[4] == "DDP_main.py");
  CHECK(argv[5] == "--local_rank=0");
}

TEST_CASE("a virtual local rank still gets its real local rank as the argument", "[launch]") {
  // torch substitutes the real local rank into the argument under
  // --virtual-local-rank too, while LOCAL_RANK is 0.
  LaunchOptions o = Launch("--local_rank");
  o.virtual_local_rank = true;
  const WorkerLaunch w = PlanWorker(PlanFor(o), 1);
  CHECK(w.argv[3] == "--local_rank=1");
  CHECK(w.virtual_local_rank);
}
