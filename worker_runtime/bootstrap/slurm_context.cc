// Context from the variables `srun` sets for each task it starts directly.
#include <limits>
#include <string>
#include <utility>

#include "common/decimal.h"
#include "common/host_list.h"
#include "worker_runtime/bootstrap/context_sources.h"
#include "worker_runtime/bootstrap/env_value.h"
#include "worker_runtime/bootstrap/slurm_lists.h"

namespace muster::runtime {
namespace {

constexpr const char* kSlurmSource = "SLURM";

// SLURM_NTASKS_PER_NODE exists only with --ntasks-per-node; otherwise
// SLURM_TASKS_PER_NODE lists every node's count and SLURM_NODEID says which
// entry is ours (the first when SLURM_NODEID is absent).
Result<int> LocalWorldSize(const EnvLookup& env) {
  if (auto text = env("SLURM_NTASKS_PER_NODE")) return PositiveInt("SLURM_NTASKS_PER_NODE", *text);
  auto list = Required(env, kSlurmSource, "SLURM_TASKS_PER_NODE");
  if (!list.ok()) return list.status();
  int node_index = 0;
  if (auto text = env("SLURM_NODEID")) {
    auto node_id = NonNegativeInt("SLURM_NODEID", *text);
    if (!node_id.ok()) return node_id.status();
    node_index = *node_id;
  }
  const auto tasks = TasksOnNode(*list, node_index);
  if (!tasks || *tasks == 0) {
    return Status::InvalidArgument("SLURM_TASKS_PER_NODE='" + *list +
                                   "' is not a tasks-per-node list with an entry for node " +
                                   std::to_string(node_index));
  }
  return *tasks;
}

}  // namespace

Result<Context> ContextFromSlurm(const EnvLookup& env) {
  Context ctx;
  ctx.source = Context::Source::kSlurm;

  auto rank_text = Required(env, kSlurmSource, "SLURM_PROCID");
  if (!rank_text.ok()) return rank_text.status();
  auto world_text = Required(env, kSlurmSource, "SLURM_NTASKS");
  if (!world_text.ok()) return world_text.status();
  auto local_rank_text = Required(env, kSlurmSource, "SLURM_LOCALID");
  if (!local_rank_text.ok()) return local_rank_text.status();
  auto job_id = Required(env, kSlurmSource, "SLURM_JOB_ID");
  if (!job_id.ok()) return job_id.status();

  auto rank = NonNegativeInt("SLURM_PROCID", *rank_text);
  if (!rank.ok()) return rank.status();
  auto world = PositiveInt("SLURM_NTASKS", *world_text);
  if (!world.ok()) return world.status();
  auto local_rank = NonNegativeInt("SLURM_LOCALID", *local_rank_text);
  if (!local_rank.ok()) return local_rank.status();
  auto local_world = LocalWorldSize(env);
  if (!local_world.ok()) return local_world.status();
  if (*rank >= *world) return NotBelow("SLURM_PROCID", *rank, "SLURM_NTASKS", *world);
  if (*local_rank >= *local_world) {
    return NotBelow("SLURM_LOCALID", *local_rank, "tasks on this node", *local_world);
  }
  ctx.rank = *rank;
  ctx.world_size = *world;
  ctx.local_rank = *local_rank;
  ctx.local_world_size = *local_world;
  ctx.run_id = *job_id;
  ctx.rank0_hosts_store = true;  // no launcher: srun started every rank

  // An exported MASTER_ADDR wins (sbatch scripts set it when the first node's
  // name does not resolve from the others); else the job's first node.
  if (auto text = env("MASTER_ADDR")) {
    auto addr = MasterAddr(std::move(*text));
    if (!addr.ok()) return addr.status();
    ctx.master_addr = std::move(*addr);
  } else {
    auto node_list = Required(env, kSlurmSource, "SLURM_JOB_NODELIST");
    if (!node_list.ok()) return node_list.status();
    auto first_host = FirstHostOfList(*node_list);
    if (!first_host.ok()) {
      // "SLURM_JOB_NODELIST='n[3-1]' is not a host list: range '3-1' ends below its start"
      return Status::InvalidArgument("SLURM_JOB_NODELIST=" + first_host.status().message());
    }
    ctx.master_addr = std::move(*first_host);
  }

  if (auto text = env("MASTER_PORT")) {
    auto port = Port("MASTER_PORT", *text);
    if (!port.ok()) return port.status();
    ctx.master_port = *port;
  } else {
    const auto job_number = ParseDecimal(*job_id, std::numeric_limits<uint64_t>::max());
    if (!job_number) {
      return Status::InvalidArgument("SLURM_JOB_ID='" + *job_id +
                                     "' is not a non-negative integer (needed to derive "
                                     "MASTER_PORT, which is not set)");
    }
    ctx.master_port = MasterPortForSlurmJob(*job_number);
  }

  if (auto text = env("SLURM_RESTART_COUNT")) {
    auto generation = NonNegativeInt64("SLURM_RESTART_COUNT", *text);
    if (!generation.ok()) return generation.status();
    ctx.generation = *generation;
  }
  return ctx;
}

}  // namespace muster::runtime
