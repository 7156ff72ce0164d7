#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "worker_runtime/bootstrap/context.h"

namespace muster::runtime {
namespace {

using Env = std::map<std::string, std::string>;

Result<Context> FromMap(const Env& vars) {
  return Context::FromEnv([&vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
}

Env Torchrun() {
  return {{"RANK", "3"},
          {"WORLD_SIZE", "8"},
          {"LOCAL_RANK", "1"},
          {"LOCAL_WORLD_SIZE", "2"},
          {"MASTER_ADDR", "10.0.0.1"},
          {"MASTER_PORT", "29500"},
          {"TORCHELASTIC_RESTART_COUNT", "2"},
          {"TORCHELASTIC_RUN_ID", "job7"}};
}

Env Slurm() {
  return {{"SLURM_PROCID", "5"},
          {"SLURM_NTASKS", "7"},
          {"SLURM_LOCALID", "1"},
          {"SLURM_NODEID", "2"},
          {"SLURM_TASKS_PER_NODE", "2(x3),1"},
          {"SLURM_JOB_NODELIST", "node[01-04]"},
          {"SLURM_JOB_ID", "123456"}};
}

std::string ErrorOf(const Env& vars) {
  auto ctx = FromMap(vars);
  REQUIRE_FALSE(ctx.ok());
  CHECK(ctx.status().IsInvalidArgument());
  return ctx.status().message();
}

std::string FirstHost(const std::string& node_list) {
  Env vars = Slurm();
  vars["SLURM_JOB_NODELIST"] = node_list;
  auto ctx = FromMap(vars);
  REQUIRE(ctx.ok());
  return ctx->master_addr;
}

TEST_CASE("torchrun variables give rank, sizes, master and generation") {
  auto ctx = FromMap(Torchrun());
  REQUIRE(ctx.ok());
  CHECK(ctx->source == Context::Source::kTorchrun);
  CHECK(ctx->rank == 3);
  CHECK(ctx->world_size == 8);
  CHECK(ctx->local_rank == 1);
  CHECK(ctx->local_world_size == 2);
  CHECK(ctx->master_addr == "10.0.0.1");
  CHECK(ctx->master_port == 29500);
  CHECK(ctx->generation == 2);
  CHECK(ctx->run_id == "job7");
  CHECK(ctx->StoreNamespace() == "muster/2/");
  CHECK(std::string(Context::SourceName(ctx->source)) == "torchrun");
}

TEST_CASE("torchrun without local variables is one node and generation 0") {
  Env vars = Torchrun();
  vars.erase("LOCAL_RANK");
  vars.erase("LOCAL_WORLD_SIZE");
  vars.erase("TORCHELASTIC_RESTART_COUNT");
  vars.erase("TORCHELASTIC_RUN_ID");
  auto ctx = FromMap(vars);
  REQUIRE(ctx.ok());
  CHECK(ctx->local_rank == 3);
  CHECK(ctx->local_world_size == 8);
  CHECK(ctx->generation == 0);
  CHECK(ctx->run_id.empty());
  CHECK(ctx->StoreNamespace() == "muster/0/");
}

TEST_CASE("torchrun variables win over SLURM's") {
  Env vars = Slurm();
  for (const auto& [name, value] : Torchrun()) vars[name] = value;
  auto ctx = FromMap(vars);
  REQUIRE(ctx.ok());
  CHECK(ctx->source == Context::Source::kTorchrun);
  CHECK(ctx->rank == 3);
}

TEST_CASE("a partial torchrun set names the missing variable") {
  CHECK(ErrorOf({{"RANK", "0"}}) == "torchrun variable WORLD_SIZE is not set");
  CHECK(ErrorOf({{"MASTER_PORT", "29500"}}) == "torchrun variable RANK is not set");
  Env vars = Torchrun();
  vars.erase("MASTER_ADDR");
  CHECK(ErrorOf(vars) == "torchrun variable MASTER_ADDR is not set");
}

TEST_CASE("rank 0 serves the store only where no launcher does") {
  CHECK(FromMap(Slurm())->rank0_hosts_store);  // srun per task: nobody else
  Env vars = Torchrun();
  CHECK_FALSE(FromMap(vars)->rank0_hosts_store);  // unset: a launcher's store
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  CHECK_FALSE(FromMap(vars)->rank0_hosts_store);
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "False";  // torchrun's c10d backend
  CHECK(FromMap(vars)->rank0_hosts_store);
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "maybe";
  CHECK(ErrorOf(vars) == "TORCHELASTIC_USE_AGENT_STORE='maybe' is not True or False");
}

TEST_CASE("torchrun errors quote the offending value") {
  Env vars = Torchrun();
  vars["RANK"] = "x";
  CHECK(ErrorOf(vars) == "RANK='x' is not a non-negative integer");
  vars["RANK"] = "-1";
  CHECK(ErrorOf(vars) == "RANK='-1' is not a non-negative integer");
  vars["RANK"] = "8";
  CHECK(ErrorOf(vars) == "RANK=8 is not below WORLD_SIZE=8");
  vars = Torchrun();
  vars["WORLD_SIZE"] = "0";
  CHECK(ErrorOf(vars) == "WORLD_SIZE='0' is not a positive integer");
  vars = Torchrun();
  vars["MASTER_PORT"] = "70000";
  CHECK(ErrorOf(vars) == "MASTER_PORT='70000' is not a port");
  vars["MASTER_PORT"] = "0";
  CHECK(ErrorOf(vars) == "MASTER_PORT='0' is not a port");
  vars["MASTER_PORT"] = "29500 ";
  CHECK(ErrorOf(vars) == "MASTER_PORT='29500 ' is not a port");
  vars = Torchrun();
  vars["LOCAL_RANK"] = "2";
  CHECK(ErrorOf(vars) == "LOCAL_RANK=2 is not below LOCAL_WORLD_SIZE=2");
  vars = Torchrun();
  vars["LOCAL_WORLD_SIZE"] = "9";
  CHECK(ErrorOf(vars) == "LOCAL_WORLD_SIZE=9 is above WORLD_SIZE=8");
  vars = Torchrun();
  vars["TORCHELASTIC_RESTART_COUNT"] = "two";
  CHECK(ErrorOf(vars) == "TORCHELASTIC_RESTART_COUNT='two' is not a non-negative integer");
  vars = Torchrun();
  vars["MASTER_ADDR"] = "";
  CHECK(ErrorOf(vars) == "MASTER_ADDR='' is not a host");
}

TEST_CASE("SLURM variables give rank, sizes, first node and a derived port") {
  auto ctx = FromMap(Slurm());
  REQUIRE(ctx.ok());
  CHECK(ctx->source == Context::Source::kSlurm);
  CHECK(ctx->rank == 5);
  CHECK(ctx->world_size == 7);
  CHECK(ctx->local_rank == 1);
  CHECK(ctx->local_world_size == 2);  // node 2 of "2(x3),1"
  CHECK(ctx->master_addr == "node01");
  CHECK(ctx->master_port == 20000 + 123456 % 12768);
  CHECK(ctx->run_id == "123456");
  CHECK(ctx->generation == 0);
  CHECK(std::string(Context::SourceName(ctx->source)) == "slurm");
}

TEST_CASE("SLURM local world size follows this node's entry or NTASKS_PER_NODE") {
  Env vars = Slurm();
  vars["SLURM_NODEID"] = "3";
  vars["SLURM_LOCALID"] = "0";
  auto last_node = FromMap(vars);
  REQUIRE(last_node.ok());
  CHECK(last_node->local_world_size == 1);

  vars.erase("SLURM_NODEID");
  vars["SLURM_TASKS_PER_NODE"] = "4,1";
  auto first_entry = FromMap(vars);
  REQUIRE(first_entry.ok());
  CHECK(first_entry->local_world_size == 4);

  vars["SLURM_NTASKS_PER_NODE"] = "3";
  auto explicit_count = FromMap(vars);
  REQUIRE(explicit_count.ok());
  CHECK(explicit_count->local_world_size == 3);
}

TEST_CASE("SLURM honours exported MASTER_ADDR, MASTER_PORT and restart count") {
  Env vars = Slurm();
  vars["MASTER_ADDR"] = "10.1.1.1";
  vars["MASTER_PORT"] = "31000";
  vars["SLURM_RESTART_COUNT"] = "4";
  auto ctx = FromMap(vars);
  REQUIRE(ctx.ok());
  CHECK(ctx->source == Context::Source::kSlurm);
  CHECK(ctx->master_addr == "10.1.1.1");
  CHECK(ctx->master_port == 31000);
  CHECK(ctx->generation == 4);
  CHECK(ctx->StoreNamespace() == "muster/4/");
}

TEST_CASE("the master is the first host of every node list form") {
  CHECK(FirstHost("n1") == "n1");
  CHECK(FirstHost("n[1-3]") == "n1");
  CHECK(FirstHost("node[01-04,7],gpu5") == "node01");
  CHECK(FirstHost("a-b[3,5-6]") == "a-b3");
  CHECK(FirstHost("gpu5,node[01-04]") == "gpu5");
  CHECK(FirstHost("rack[2-3]-n[007-009]") == "rack2-n007");
  CHECK(FirstHost("n[10]") == "n10");
  CHECK(FirstHost("node[1-3]-ib") == "node1-ib");
  // Empty items are skipped and blanks separate hosts, as in scontrol.
  CHECK(FirstHost("n1,") == "n1");
  CHECK(FirstHost(",n1") == "n1");
  CHECK(FirstHost("n 1") == "n");
}

TEST_CASE("a malformed node list is an error quoting it and saying why") {
  for (const std::string bad :
       {"n[3-", "", " , ", "n[]", "n[3-1]", "n[a-b]", "n]1", "n[1-2", "n[1,]", "n1,m[1-2"}) {
    Env vars = Slurm();
    vars["SLURM_JOB_NODELIST"] = bad;
    const std::string prefix = "SLURM_JOB_NODELIST='" + bad + "' is not a host list: ";
    const std::string error = ErrorOf(vars);
    CHECK(error.substr(0, prefix.size()) == prefix);
    CHECK(error.size() > prefix.size());
  }
  Env vars = Slurm();
  vars["SLURM_JOB_NODELIST"] = "n[3-1]";
  CHECK(ErrorOf(vars) ==
        "SLURM_JOB_NODELIST='n[3-1]' is not a host list: range '3-1' ends below its start");
}

TEST_CASE("the derived port is deterministic and within 20000..32767, below ephemeral ports") {
  const std::pair<std::string, int> cases[] = {
      {"0", 20000}, {"12767", 32767}, {"12768", 20000}, {"123456", 20000 + 123456 % 12768}};
  for (const auto& [job_id, port] : cases) {
    Env vars = Slurm();
    vars["SLURM_JOB_ID"] = job_id;
    auto ctx = FromMap(vars);
    REQUIRE(ctx.ok());
    CHECK(ctx->master_port == port);
  }
  Env neighbour = Slurm();
  neighbour["SLURM_JOB_ID"] = "123457";
  auto next_job = FromMap(neighbour);
  auto this_job = FromMap(Slurm());
  REQUIRE(next_job.ok());
  REQUIRE(this_job.ok());
  CHECK(next_job->master_port != this_job->master_port);
}

TEST_CASE("SLURM errors name the variable and quote the value") {
  Env vars = Slurm();
  vars["SLURM_PROCID"] = "7";
  CHECK(ErrorOf(vars) == "SLURM_PROCID=7 is not below SLURM_NTASKS=7");
  vars = Slurm();
  vars["SLURM_NTASKS"] = "many";
  CHECK(ErrorOf(vars) == "SLURM_NTASKS='many' is not a positive integer");
  vars = Slurm();
  vars["SLURM_LOCALID"] = "2";
  CHECK(ErrorOf(vars) == "SLURM_LOCALID=2 is not below tasks on this node=2");
  vars = Slurm();
  vars["MASTER_ADDR"] = "";
  CHECK(ErrorOf(vars) == "MASTER_ADDR='' is not a host");
  vars = Slurm();
  vars["SLURM_TASKS_PER_NODE"] = "2(x3";
  CHECK(ErrorOf(vars) ==
        "SLURM_TASKS_PER_NODE='2(x3' is not a tasks-per-node list with an entry for node 2");
  vars["SLURM_TASKS_PER_NODE"] = "2,1";
  CHECK(ErrorOf(vars) ==
        "SLURM_TASKS_PER_NODE='2,1' is not a tasks-per-node list with an entry for node 2");
  vars = Slurm();
  vars["SLURM_JOB_ID"] = "abc";
  CHECK(ErrorOf(vars) ==
        "SLURM_JOB_ID='abc' is not a non-negative integer (needed to derive MASTER_PORT, which "
        "is not set)");
  vars = Slurm();
  vars["MASTER_PORT"] = "70000";
  CHECK(ErrorOf(vars) == "MASTER_PORT='70000' is not a port");
  vars = Slurm();
  vars.erase("SLURM_NTASKS");
  CHECK(ErrorOf(vars) == "SLURM variable SLURM_NTASKS is not set");
  vars = Slurm();
  vars["SLURM_RESTART_COUNT"] = "-1";
  CHECK(ErrorOf(vars) == "SLURM_RESTART_COUNT='-1' is not a non-negative integer");
}

TEST_CASE("no launcher variables mean a single process") {
  auto ctx = FromMap({{"PATH", "/usr/bin"}, {"SLURM_JOB_ID", "9"}});
  REQUIRE(ctx.ok());
  CHECK(ctx->source == Context::Source::kSingleProcess);
  CHECK(ctx->rank == 0);
  CHECK(ctx->world_size == 1);
  CHECK(ctx->local_rank == 0);
  CHECK(ctx->local_world_size == 1);
  CHECK(ctx->master_addr == "127.0.0.1");
  CHECK(ctx->master_port == 0);
  CHECK(ctx->generation == 0);
  CHECK(ctx->StoreNamespace() == "muster/0/");
  CHECK(std::string(Context::SourceName(ctx->source)) == "single-process");
}

}  // namespace
}  // namespace muster::runtime
