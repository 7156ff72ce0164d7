// The environment each worker starts with: torchrun's variables, computed from
// the node's assignment, layered over the agent's own environment.
#pragma once

#include <csignal>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launcher/plan/gpu_ids.h"
#include "rendezvous/protocol/messages.h"

namespace muster {

// The descriptors every spawned process gets (process_spawner.h): its
// progress pipe, named to workers as MUSTER_PROGRESS_FD, and the read end of
// its control pipe, named as MUSTER_CONTROL_FD.
inline constexpr int kProgressFd = 3;
inline constexpr int kControlFd = 4;

// The signal on which a warm-started Python worker dumps every thread's
// stack (faulthandler) into a memfd it names on its progress pipe, named to
// it as MUSTER_STACK_SIGNAL: a real-time signal, so no script's own handler
// (SLURM's SIGUSR1 included) meets it. Only a worker that said it dumps
// stacks is sent it (a real-time signal's default action ends a process).
inline int StackDumpSignal() { return SIGRTMIN + 6; }

struct WorkerIdentity {
  int local_rank = 0;
  int restart_count = 0;
  int max_restarts = 0;
  std::string run_id;
  std::string role = "default";
  std::string error_file;                           // TORCHELASTIC_ERROR_FILE
  std::optional<std::string> cuda_visible_devices;  // unset: leave the inherited value alone
  // torchrun's --virtual-local-rank: LOCAL_RANK is 0 (the worker's own GPU is
  // its device 0); local_rank still places it (RANK = offset + local_rank).
  bool virtual_local_rank = false;
  // Offer the control channel (MUSTER_CONTROL_FD): the agent recovers this
  // worker in place. Without it a worker whose collective fails exits at
  // once, as before.
  bool control_channel = false;
};

// The variables muster sets for one worker: RANK, LOCAL_RANK, GROUP_RANK,
// ROLE_RANK, ROLE_NAME, LOCAL_WORLD_SIZE, WORLD_SIZE, GROUP_WORLD_SIZE,
// ROLE_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_*, MUSTER_PROGRESS_FD,
// MUSTER_CONTROL_FD when `worker.control_channel`, and
// CUDA_VISIBLE_DEVICES when GPU ids are known; TORCH_NCCL_ASYNC_ERROR_HANDLING=1,
// NCCL_ASYNC_ERROR_HANDLING=1 (the name torch 2.0/2.1 read) and, with more
// than one local worker, OMP_NUM_THREADS=1, each only when `inherited` does
// not already set it.
std::map<std::string, std::string> WorkerVariables(const rdzv::Assignment& node,
                                                   const WorkerIdentity& worker,
                                                   const EnvLookup& inherited);

// The variables of WorkerVariables that are the same for every worker of a
// node with `local_world_size` workers: TORCH_NCCL_ASYNC_ERROR_HANDLING=1,
// NCCL_ASYNC_ERROR_HANDLING=1 and, with more than one worker,
// OMP_NUM_THREADS=1, each only when `inherited` does not already set it.
std::map<std::string, std::string> NodeVariables(int local_world_size, const EnvLookup& inherited);

// What the agent adds to its own environment before anything starts, as
// torchrun sets them in its own: TORCHELASTIC_SIGNALS_TO_HANDLE (the
// --signals-to-handle names, comma-separated; torch's elastic multiprocessing
// reads it), and, when `python_package_dir` is set (python_package.h), a
// PYTHONPATH that ends with it (the user's entries first).
std::map<std::string, std::string> AgentVariables(
    const std::vector<std::string>& signals_to_handle,
    const std::optional<std::string>& python_package_dir, const EnvLookup& inherited);

// `inherited` ("NAME=value" entries, as in environ) with `variables` replacing
// or adding entries. Order: inherited entries first, then new ones sorted.
std::vector<std::string> MergeEnvironment(const std::vector<std::string>& inherited,
                                          const std::map<std::string, std::string>& variables);

// The CUDA_VISIBLE_DEVICES value for local rank `local_rank`, or nullopt when
// no GPU ids are known (then the inherited value is left alone). With
// isolate=false (the default, --gpu-visibility all) every worker sees all ids
// and LOCAL_RANK indexes them; with isolate=true a worker sees one id,
// assigned round-robin.
std::optional<std::string> VisibleDevicesFor(const std::vector<std::string>& gpu_ids, bool isolate,
                                             int local_rank);

}  // namespace muster
