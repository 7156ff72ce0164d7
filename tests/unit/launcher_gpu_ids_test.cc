#include <catch2/catch.hpp>
#include <map>

#include "tests/unit/launcher_test_support.h"

#include "launcher/plan/gpu_ids.h"

using namespace muster;
using muster::testing::EnvOf;

namespace {
std::vector<std::string> TwoGpus() { return {"0", "1"}; }
std::vector<std::string> NoGpus() { return {}; }
}  // namespace

TEST_CASE("GPU ids come from each source in order of precedence", "[gpu]") {
  const std::map<std::string, std::string> all = {
      {"CUDA_VISIBLE_DEVICES", "2,3"}, {"SLURM_STEP_GPUS", "4"}, {"SLURM_JOB_GPUS", "5,6,7"}};
  auto from_flag = ResolveGpuIds(std::vector<std::string>{"9"}, EnvOf(all), TwoGpus);
  CHECK(from_flag.ids == std::vector<std::string>{"9"});
  CHECK(from_flag.source == "--gpus");

  auto from_cvd = ResolveGpuIds(std::nullopt, EnvOf(all), TwoGpus);
  CHECK(from_cvd.ids == std::vector<std::string>{"2", "3"});
  CHECK(from_cvd.source == "CUDA_VISIBLE_DEVICES");

  auto from_step = ResolveGpuIds(
      std::nullopt, EnvOf({{"SLURM_STEP_GPUS", "4"}, {"SLURM_JOB_GPUS", "5,6,7"}}), TwoGpus);
  CHECK(from_step.ids == std::vector<std::string>{"4"});
  CHECK(from_step.source == "SLURM_STEP_GPUS");

  auto from_job = ResolveGpuIds(std::nullopt, EnvOf({{"SLURM_JOB_GPUS", "5, 6,7"}}), TwoGpus);
  CHECK(from_job.ids == std::vector<std::string>{"5", "6", "7"});
  CHECK(from_job.source == "SLURM_JOB_GPUS");

  auto discovered = ResolveGpuIds(std::nullopt, EnvOf({}), TwoGpus);
  CHECK(discovered.ids == std::vector<std::string>{"0", "1"});
  CHECK(discovered.source == "discovered");

  auto none = ResolveGpuIds(std::nullopt, EnvOf({}), NoGpus);
  CHECK(none.ids.empty());
  CHECK(none.source == "none");
}

TEST_CASE("an empty CUDA_VISIBLE_DEVICES hides every GPU", "[gpu]") {
  auto ids = ResolveGpuIds(std::nullopt, EnvOf({{"CUDA_VISIBLE_DEVICES", ""}}), TwoGpus);
  CHECK(ids.ids.empty());
  CHECK(ids.source == "CUDA_VISIBLE_DEVICES");
}

TEST_CASE("GPU UUIDs pass through untouched", "[gpu]") {
  auto ids =
      ResolveGpuIds(std::nullopt, EnvOf({{"CUDA_VISIBLE_DEVICES", "GPU-1a2b,MIG-3c4d"}}), NoGpus);
  CHECK(ids.ids == std::vector<std::string>{"GPU-1a2b", "MIG-3c4d"});
}
