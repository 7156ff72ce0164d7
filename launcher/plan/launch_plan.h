// LaunchPlan: LaunchOptions resolved against this machine — how many workers,
// which GPU each sees, the exact command each runs, and how the node finds
// its peers. Everything that can be wrong with the machine (no GPU for
// `--nproc-per-node gpu`, an interpreter not on PATH) fails here, before any
// worker starts, with one line naming the flag and value.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/plan/elastic_config.h"
#include "launcher/plan/gpu_ids.h"
#include "launcher/plan/launch_options.h"
#include "rendezvous/protocol/messages.h"
#include "rendezvous/state/settings.h"

namespace muster {

// What the plan needs to know about the machine; injected so tests need no GPU.
struct MachineFacts {
  std::function<std::vector<std::string>()> discover_gpus;
  int cpu_count = 1;
  // Absolute path of an executable name (PATH search when it has no '/').
  std::function<std::optional<std::string>(const std::string&)> find_executable;
};

struct LaunchPlan {
  int nproc_per_node = 1;
  GpuIds gpus;
  // Each worker sees one GPU id (--gpu-visibility isolate, --virtual-local-rank);
  // false: every worker sees them all (the default).
  bool isolate_gpus = false;
  bool virtual_local_rank = false;  // every worker is told LOCAL_RANK=0
  std::string executable;           // absolute path of what each worker execs
  std::vector<std::string> argv;    // argv[0] included; the same for every worker
  // `muster launch`: each worker's argv gets "<local_rank_flag>=N" inserted at
  // index script_args_at (right after SCRIPT). Empty flag: nothing inserted.
  std::string local_rank_flag;
  std::size_t script_args_at = 0;
  std::string run_id;
  std::vector<std::string> warnings;  // printed once at start
};

// Fails, naming the flag and value, when the machine cannot give the options
// what they ask: no GPU for `--nproc-per-node gpu`, fewer GPU ids than workers
// under --virtual-local-rank, an interpreter or executable not found.
Result<LaunchPlan> MakeLaunchPlan(const LaunchOptions& options, const EnvLookup& env,
                                  const MachineFacts& machine);

// What the plan decides for one worker, beyond the rank variables of
// worker_env.h: its command line, its CUDA_VISIBLE_DEVICES and whether it is
// told LOCAL_RANK=0.
struct WorkerLaunch {
  std::vector<std::string> argv;                    // argv[0] included
  std::optional<std::string> cuda_visible_devices;  // nullopt: the inherited value is left alone
  bool virtual_local_rank = false;
};

// For local rank `local_rank` (0 <= local_rank < plan.nproc_per_node):
//   argv: plan.argv, plus "--local_rank=N" after SCRIPT under `muster launch`
//     (N is the real local rank, under --virtual-local-rank too, as torch);
//   CUDA_VISIBLE_DEVICES: all ids (default), the local rank's id (isolate,
//     round-robin; --virtual-local-rank), or with no ids known: nothing, or
//     under --virtual-local-rank the local rank itself, as torchrun.
WorkerLaunch PlanWorker(const LaunchPlan& plan, int local_rank);

// This node's place under static membership (torchrun's `static` backend, and
// one-node jobs that are not --standalone): a fixed number of nodes, ranks
// from --node-rank, the same worker count everywhere. Node 0 (group rank 0)
// serves the store at master_addr:master_port; port 0 (one node only) means
// any port, which the agent fills in once it has bound it.
Result<rdzv::Assignment> StaticAssignment(const LaunchOptions& options, int local_world_size);

// The elastic rendezvous configuration when the options ask for one
// (--rdzv-backend c10d|muster across nodes, an --nnodes range, or one node
// with an --rdzv-endpoint named: that rendezvous is used, as torchrun's
// agent does); nullopt for static runs and one node with no endpoint.
Result<std::optional<ElasticConfig>> MakeElasticConfig(const LaunchOptions& options);

// MachineFacts of the machine this runs on.
MachineFacts ThisMachine(const EnvLookup& env);

// The interpreter that runs Python workers, as a user names it in messages:
// "/usr/bin/python3", or "python3 (/root/.pyenv/shims/python3)" when found
// on PATH.
std::string InterpreterText(const LaunchOptions& options, const LaunchPlan& plan);

// PATH search like execvp's: returns the first executable match.
std::optional<std::string> FindExecutable(const std::string& name, const std::string& path_var);

}  // namespace muster
