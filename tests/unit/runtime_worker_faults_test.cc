// WorkerFaults: which --inject faults a worker carries out, from the plan the
// agent hands down; the ones already fired are not fired again.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "tests/unit/launcher_test_support.h"
#include "worker_runtime/fault/worker_faults.h"

namespace muster::runtime {
namespace {

using muster::testing::EnvOf;

TEST_CASE("without a plan a worker has no faults") {
  auto faults = WorkerFaults::FromEnv(EnvOf({}), 0, 1);
  REQUIRE(faults.ok());
  CHECK_FALSE(faults->CorruptsCheckpointAt(1000, ProgressReporter()));
  faults->AtStep(1000, ProgressReporter());  // returns: nothing fires
}

TEST_CASE("corrupt-checkpoint is rank 0's, fires once at the first checkpoint at its step") {
  const auto env = EnvOf({{"MUSTER_INJECT", "corrupt-checkpoint,step=10"}});
  auto rank0 = WorkerFaults::FromEnv(env, 0, 2);
  REQUIRE(rank0.ok());
  CHECK_FALSE(rank0->CorruptsCheckpointAt(8, ProgressReporter()));
  CHECK(rank0->CorruptsCheckpointAt(12, ProgressReporter()));
  CHECK_FALSE(rank0->CorruptsCheckpointAt(16, ProgressReporter()));
  auto rank1 = WorkerFaults::FromEnv(env, 1, 2);
  REQUIRE(rank1.ok());
  CHECK_FALSE(rank1->CorruptsCheckpointAt(12, ProgressReporter()));
}

TEST_CASE("faults the agent lists as fired are not fired again") {
  auto faults = WorkerFaults::FromEnv(
      EnvOf({{"MUSTER_INJECT", "exit-worker,rank=0,step=1;corrupt-checkpoint,step=1"},
             {"MUSTER_INJECT_FIRED", "0,1"}}),
      0, 1);
  REQUIRE(faults.ok());
  CHECK_FALSE(faults->CorruptsCheckpointAt(5, ProgressReporter()));
  faults->AtStep(5, ProgressReporter());  // exit-worker fired before: returns
}

TEST_CASE("a malformed plan, seed or fired list names the variable") {
  auto bad_plan = WorkerFaults::FromEnv(EnvOf({{"MUSTER_INJECT", "exit-worker,step=1"}}), 0, 1);
  REQUIRE_FALSE(bad_plan.ok());
  CHECK(bad_plan.status().message() ==
        "MUSTER_INJECT: 'exit-worker,step=1': exit-worker needs a target: rank=N or rank=any");
  auto bad_seed = WorkerFaults::FromEnv(
      EnvOf({{"MUSTER_INJECT", "exit-worker,rank=0,step=1"}, {"MUSTER_INJECT_SEED", "-1"}}), 0, 1);
  REQUIRE_FALSE(bad_seed.ok());
  CHECK(bad_seed.status().message() == "MUSTER_INJECT_SEED: '-1' must be a non-negative integer");
  auto bad_fired = WorkerFaults::FromEnv(
      EnvOf({{"MUSTER_INJECT", "exit-worker,rank=0,step=1"}, {"MUSTER_INJECT_FIRED", "1"}}), 0, 1);
  REQUIRE_FALSE(bad_fired.ok());
  CHECK(bad_fired.status().message() ==
        "MUSTER_INJECT_FIRED: '1' is not a list of fault indices below 1");
}

TEST_CASE("DamageFile changes one byte in the middle of the file") {
  const auto path =
      std::filesystem::temp_directory_path() / ("muster_damage_" + std::to_string(::getpid()));
  std::ofstream(path) << "0123456789";
  REQUIRE(DamageFile(path.string()).ok());
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  CHECK(text.size() == 10);
  CHECK(text.substr(0, 5) == "01234");
  CHECK(text[5] != '5');
  CHECK(text.substr(6) == "6789");
  std::filesystem::remove(path);
  CHECK(DamageFile(path.string()).message().starts_with("cannot open '"));
}

}  // namespace
}  // namespace muster::runtime
