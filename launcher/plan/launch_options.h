// LaunchOptions: everything the agent needs to know to launch a job, after
// the command line, PET_* environment variables and the --config file have
// been merged and validated. Values here are already checked: ranges hold,
// enums are known, MIN <= MAX. What still depends on the machine (GPU ids,
// core count) is resolved later by the launch plan.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/fault_spec.h"

namespace muster {

// How --nproc-per-node was given: a number, or a rule resolved against the
// machine (GPU ids, cores).
struct ProcsPerNode {
  enum class Kind { kCount, kGpu, kCpu, kAuto };
  Kind kind = Kind::kCount;
  int count = 1;  // meaningful only for kCount; >= 1
};

// What CUDA_VISIBLE_DEVICES each worker gets when GPU ids are known.
enum class GpuVisibility {
  kAll,      // every worker sees the whole list; LOCAL_RANK i indexes it (list[i] is its GPU)
  kIsolate,  // worker i sees only the i-th id, as device 0, but LOCAL_RANK stays i
};

// Which of a worker's streams go to files (--redirects) or to files and the
// console (--tee). Bit 1 = stdout, bit 2 = stderr, like torchrun's Std.
enum StdMask : int { kStdNone = 0, kStdOut = 1, kStdErr = 2, kStdAll = 3 };

// A torchrun "Std" spec: one mask for every local rank ("3"), or a mask per
// local rank ("0:1,1:2"); ranks not listed get kStdNone.
struct StdSpec {
  int all = kStdNone;
  std::map<int, int> per_rank;
  int For(int local_rank) const {
    auto it = per_rank.find(local_rank);
    return it != per_rank.end() ? it->second : all;
  }
};

struct LaunchOptions {
  // Nodes: --nnodes N or MIN:MAX. 1 <= min_nodes <= max_nodes.
  int min_nodes = 1;
  int max_nodes = 1;
  ProcsPerNode nproc_per_node;

  // Rendezvous.
  std::string rdzv_backend = "static";  // static | c10d | muster
  std::string rdzv_endpoint;            // host[:port], empty if not given
  std::string rdzv_id = "none";
  std::map<std::string, std::string> rdzv_conf;
  bool standalone = false;
  int node_rank = 0;  // static rendezvous only; 0 <= node_rank < max_nodes
  std::string master_addr = "127.0.0.1";
  std::optional<int> master_port;  // unset: 0 on one node (agent binds any), 29500 on several
  // The address this node advertises; empty: the one that reaches the rendezvous.
  std::string local_addr;

  // The worker store (hosted by node 0, or by the generation's master).
  // --store-allow: the CIDRs whose hosts may connect (loopback always may),
  // in place of the generation's member nodes (elastic) or everyone
  // (static); each as "10.0.0.0/8". Empty: not given.
  std::vector<std::string> store_allow;
  // --store-max-keys, --store-max-bytes: the store's bounds; unset: the
  // store's defaults (store/request_handler.h).
  std::optional<uint64_t> store_max_keys;
  std::optional<uint64_t> store_max_bytes;
  // --store-max-connections: connections the store holds open at once;
  // unset: store::kDefaultStoreMaxConnections.
  std::optional<uint64_t> store_max_connections;

  // Workers.
  int max_restarts = 0;                // >= 0
  double monitor_interval_s = 0.1;     // > 0; exits are event-driven, see README
  std::string start_method = "spawn";  // spawn | fork | forkserver; accepted, no effect
  std::string role = "default";
  bool run_as_module = false;  // -m: python -m SCRIPT
  bool no_python = false;      // SCRIPT is an executable, not a Python file
  bool run_path = false;       // python -c 'runpy.run_path(SCRIPT)'
  std::string python;          // interpreter; resolved from --python/$MUSTER_PYTHON/PATH
  // Python workers are forked from a warm process that imported the
  // script's torch modules once per node (warm_process.h), unless this is
  // set (--no-warm-workers).
  bool no_warm_workers = false;
  std::vector<std::string> warm_imports;  // --warm-import: imported too
  // Where `python` came from, as errors name it: "--python", "PET_PYTHON",
  // "MUSTER_PYTHON", a config key; empty: the default, python3 on PATH.
  std::string python_origin;

  // Output.
  std::string log_dir;  // empty: no per-rank files unless redirects/tee need them
  StdSpec redirects;
  StdSpec tee;
  std::optional<std::vector<int>> local_ranks_filter;  // console shows only these local ranks
  bool prefix_output = true;                           // "[rankN]:" before each line
  // torchrun's --duplicate-std{out,err}-filters: lines of tee'd streams that
  // contain any of these go to <attempt dir>/filtered_std{out,err}.log too.
  std::vector<std::string> duplicate_stdout_filters;
  std::vector<std::string> duplicate_stderr_filters;

  // GPUs.
  std::optional<std::vector<std::string>> gpus;  // --gpus LIST
  GpuVisibility gpu_visibility = GpuVisibility::kAll;
  // torchrun's --virtual-local-rank: worker i sees only its own GPU (the i-th
  // id) and is told LOCAL_RANK=0; RANK, GROUP_RANK and the rest are unchanged.
  bool virtual_local_rank = false;

  double shutdown_timeout_s = 30;  // SIGTERM -> SIGKILL grace, >= 0
  // --hang-timeout: auto (the learned rule of launcher/process/hang_judge.h),
  // or a worker that reported progress and then none for hang_timeout_s is
  // killed as hung and the job restarts (0: off, >= 0).
  bool hang_auto = true;
  double hang_timeout_s = 0;
  // --recovery: after a worker fails, `restart` restarts every worker;
  // `in-place` and `auto` start the failed one alone while the others pause
  // and rejoin (control/PROTOCOL.md), when every worker said it can (the
  // muster Python package, muster-train); otherwise every worker restarts.
  // They differ in what is said when a run falls short of that: `in-place`
  // (asked for) warns, `auto` (the default) logs it. Elastic runs and
  // static runs on one node; a static run across nodes restarts.
  enum class Recovery { kAuto, kRestart, kInPlace };
  // Which path a run takes: DecideRecovery (node_machine.h).
  Recovery recovery = Recovery::kAuto;
  // How long each of the pause and the join of an in-place recovery may
  // take before it falls back to restarting every worker. > 0.
  double recovery_timeout_s = 10;

  // Faults to inject (--inject/MUSTER_INJECT, seeded by --inject-seed/
  // MUSTER_INJECT_SEED); nullopt: none, and injection costs nothing.
  std::string inject;
  uint64_t inject_seed = 0;
  std::optional<FaultPlan> fault_plan;

  std::string config_file;  // the --config given, for reporting only

  // The agent's health endpoint (--health-port, else torchrun's
  // TORCHELASTIC_HEALTH_CHECK_PORT): GET /healthz and /metrics on this port
  // (0: one the kernel picks); unset: none. health_port_origin names where
  // it came from, for errors ("--health-port", "PET_HEALTH_PORT",
  // "TORCHELASTIC_HEALTH_CHECK_PORT", a config key).
  std::optional<int> health_port;
  std::string health_port_origin;

  // `muster launch` (torch.distributed.launch) without --use-env: the flag
  // that tells each worker its local rank, "--local_rank" or "--local-rank",
  // inserted as "FLAG=N" between SCRIPT and its arguments. Empty: none.
  std::string local_rank_flag;

  // The training program and its arguments, passed through untouched.
  std::string script;
  std::vector<std::string> script_args;
};

}  // namespace muster
