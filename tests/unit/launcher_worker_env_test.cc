#include <catch2/catch.hpp>
#include <map>

#include "tests/unit/launcher_test_support.h"

#include "launcher/plan/worker_env.h"

using namespace muster;
using muster::testing::EnvOf;

namespace {

rdzv::Assignment TwoNodesOfFour(int node_rank) {
  rdzv::Assignment a;
  a.group_rank = node_rank;
  a.group_world_size = 2;
  a.local_world_size = 4;
  a.global_rank_offset = node_rank * 4;
  a.world_size = 8;
  a.master_addr = "10.0.0.1";
  a.master_port = 29500;
  return a;
}
}  // namespace

TEST_CASE("worker variables are exactly torchrun's set", "[env]") {
  WorkerIdentity w;
  w.local_rank = 2;
  w.restart_count = 1;
  w.max_restarts = 3;
  w.run_id = "job7";
  w.role = "trainer";
  w.error_file = "/tmp/e.json";
  auto v = WorkerVariables(TwoNodesOfFour(1), w, EnvOf({}));
  const std::map<std::string, std::string> expected = {
      {"RANK", "6"},
      {"LOCAL_RANK", "2"},
      {"GROUP_RANK", "1"},
      {"ROLE_RANK", "6"},
      {"ROLE_NAME", "trainer"},
      {"LOCAL_WORLD_SIZE", "4"},
      {"WORLD_SIZE", "8"},
      {"GROUP_WORLD_SIZE", "2"},
      {"ROLE_WORLD_SIZE", "8"},
      {"MASTER_ADDR", "10.0.0.1"},
      {"MASTER_PORT", "29500"},
      {"TORCHELASTIC_RESTART_COUNT", "1"},
      {"TORCHELASTIC_MAX_RESTARTS", "3"},
      {"TORCHELASTIC_RUN_ID", "job7"},
      {"TORCHELASTIC_USE_AGENT_STORE", "True"},
      {"TORCHELASTIC_ERROR_FILE", "/tmp/e.json"},
      {"MUSTER_PROGRESS_FD", "3"},
      {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"},
      {"NCCL_ASYNC_ERROR_HANDLING", "1"},
      {"OMP_NUM_THREADS", "1"},
  };
  CHECK(v == expected);
}

TEST_CASE("inherited OMP_NUM_THREADS and NCCL error handling are left alone", "[env]") {
  WorkerIdentity w;
  auto v = WorkerVariables(TwoNodesOfFour(0), w,
                           EnvOf({{"OMP_NUM_THREADS", "8"},
                                  {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "0"},
                                  {"NCCL_ASYNC_ERROR_HANDLING", "0"}}));
  CHECK(v.count("OMP_NUM_THREADS") == 0);
  CHECK(v.count("TORCH_NCCL_ASYNC_ERROR_HANDLING") == 0);
  CHECK(v.count("NCCL_ASYNC_ERROR_HANDLING") == 0);
}

TEST_CASE("torch 2.0 and 2.1 get NCCL async error handling under the old name too", "[env]") {
  // Each name is set unless the launcher's environment has that very name.
  auto v = WorkerVariables(TwoNodesOfFour(0), WorkerIdentity{},
                           EnvOf({{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "0"}}));
  CHECK(v.count("TORCH_NCCL_ASYNC_ERROR_HANDLING") == 0);
  CHECK(v.at("NCCL_ASYNC_ERROR_HANDLING") == "1");
  v = WorkerVariables(TwoNodesOfFour(0), WorkerIdentity{},
                      EnvOf({{"NCCL_ASYNC_ERROR_HANDLING", "3"}}));
  CHECK(v.at("TORCH_NCCL_ASYNC_ERROR_HANDLING") == "1");
  CHECK(v.count("NCCL_ASYNC_ERROR_HANDLING") == 0);
}

TEST_CASE("a virtual local rank is 0 while the global ranks stay", "[env]") {
  WorkerIdentity w;
  w.local_rank = 3;
  w.virtual_local_rank = true;
  w.cuda_visible_devices = "7";
  auto v = WorkerVariables(TwoNodesOfFour(1), w, EnvOf({}));
  CHECK(v.at("LOCAL_RANK") == "0");
  CHECK(v.at("RANK") == "7");
  CHECK(v.at("ROLE_RANK") == "7");
  CHECK(v.at("GROUP_RANK") == "1");
  CHECK(v.at("LOCAL_WORLD_SIZE") == "4");
  CHECK(v.at("CUDA_VISIBLE_DEVICES") == "7");
}

TEST_CASE("a single worker does not get OMP_NUM_THREADS", "[env]") {
  rdzv::Assignment a;
  a.local_world_size = 1;
  auto v = WorkerVariables(a, WorkerIdentity{}, EnvOf({}));
  CHECK(v.count("OMP_NUM_THREADS") == 0);
}

TEST_CASE("CUDA_VISIBLE_DEVICES is set only when GPU ids are known", "[env]") {
  WorkerIdentity w;
  CHECK(WorkerVariables(TwoNodesOfFour(0), w, EnvOf({})).count("CUDA_VISIBLE_DEVICES") == 0);
  w.cuda_visible_devices = std::string("5");
  CHECK(WorkerVariables(TwoNodesOfFour(0), w, EnvOf({})).at("CUDA_VISIBLE_DEVICES") == "5");
}

TEST_CASE("all gives every worker the list, isolate gives each worker one id", "[env]") {
  const std::vector<std::string> ids = {"4", "5", "6"};
  CHECK(VisibleDevicesFor(ids, true, 0) == "4");
  CHECK(VisibleDevicesFor(ids, true, 2) == "6");
  CHECK(VisibleDevicesFor(ids, true, 3) == "4");  // round-robin beyond the list
  CHECK(VisibleDevicesFor(ids, false, 1) == "4,5,6");
  CHECK_FALSE(VisibleDevicesFor({}, true, 0).has_value());
}

TEST_CASE("merging replaces inherited values in place and appends new ones", "[env]") {
  auto merged = MergeEnvironment({"PATH=/bin", "RANK=99", "HOME=/root"},
                                 {{"RANK", "0"}, {"WORLD_SIZE", "2"}});
  CHECK(merged == std::vector<std::string>{"PATH=/bin", "RANK=0", "HOME=/root", "WORLD_SIZE=2"});
}

TEST_CASE("the control channel is named only when the agent recovers workers in place", "[env]") {
  rdzv::Assignment node;
  WorkerIdentity w;
  CHECK(WorkerVariables(node, w, EnvOf({})).count("MUSTER_CONTROL_FD") == 0);
  w.control_channel = true;
  CHECK(WorkerVariables(node, w, EnvOf({})).at("MUSTER_CONTROL_FD") == "4");
}
