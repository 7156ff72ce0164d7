#include "launcher/plan/worker_env.h"

#include <set>

#include "launcher/plan/python_package.h"

namespace muster {

std::map<std::string, std::string> WorkerVariables(const rdzv::Assignment& node,
                                                   const WorkerIdentity& worker,
                                                   const EnvLookup& inherited) {
  const int rank = node.global_rank_offset + worker.local_rank;
  std::map<std::string, std::string> v = {
      {"RANK", std::to_string(rank)},
      {"LOCAL_RANK", worker.virtual_local_rank ? "0" : std::to_string(worker.local_rank)},
      {"GROUP_RANK", std::to_string(node.group_rank)},
      // One role per job: the role rank and size equal the global ones.
      {"ROLE_RANK", std::to_string(rank)},
      {"ROLE_NAME", worker.role},
      {"LOCAL_WORLD_SIZE", std::to_string(node.local_world_size)},
      {"WORLD_SIZE", std::to_string(node.world_size)},
      {"GROUP_WORLD_SIZE", std::to_string(node.group_world_size)},
      {"ROLE_WORLD_SIZE", std::to_string(node.world_size)},
      {"MASTER_ADDR", node.master_addr},
      {"MASTER_PORT", std::to_string(node.master_port)},
      {"TORCHELASTIC_RESTART_COUNT", std::to_string(worker.restart_count)},
      {"TORCHELASTIC_MAX_RESTARTS", std::to_string(worker.max_restarts)},
      {"TORCHELASTIC_RUN_ID", worker.run_id},
      // Workers always use the agent's store: torch then namespaces its keys by
      // attempt, and no worker has to bind a port.
      {"TORCHELASTIC_USE_AGENT_STORE", "True"},
      {"TORCHELASTIC_ERROR_FILE", worker.error_file},
      // Where the worker reports progress (kProgressFd); replaces an
      // inherited value, which would name an outer agent's pipe.
      {"MUSTER_PROGRESS_FD", std::to_string(kProgressFd)},
  };
  // The pipe is always there; naming it offers the channel (PROTOCOL.md).
  if (worker.control_channel) v.emplace("MUSTER_CONTROL_FD", std::to_string(kControlFd));
  v.merge(NodeVariables(node.local_world_size, inherited));
  if (worker.cuda_visible_devices) v["CUDA_VISIBLE_DEVICES"] = *worker.cuda_visible_devices;
  return v;
}

std::map<std::string, std::string> NodeVariables(int local_world_size, const EnvLookup& inherited) {
  std::map<std::string, std::string> v;
  // NCCL aborts a communicator whose peer failed instead of hanging; torch
  // 2.0 and 2.1 read the older name, later versions the TORCH_ one.
  for (const char* name : {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING"}) {
    if (!inherited(name)) v.emplace(name, "1");
  }
  // Several workers each spawning one OpenMP thread per core oversubscribe the
  // node; torchrun sets 1 for the same reason.
  if (local_world_size > 1 && !inherited("OMP_NUM_THREADS")) v.emplace("OMP_NUM_THREADS", "1");
  return v;
}

std::map<std::string, std::string> AgentVariables(
    const std::vector<std::string>& signals_to_handle,
    const std::optional<std::string>& python_package_dir, const EnvLookup& inherited) {
  std::string signals;
  for (const auto& name : signals_to_handle) signals += (signals.empty() ? "" : ",") + name;
  std::map<std::string, std::string> v = {{"TORCHELASTIC_SIGNALS_TO_HANDLE", signals}};
  if (python_package_dir)
    v["PYTHONPATH"] = PythonPathWith(inherited("PYTHONPATH"), *python_package_dir);
  return v;
}

std::vector<std::string> MergeEnvironment(const std::vector<std::string>& inherited,
                                          const std::map<std::string, std::string>& variables) {
  std::vector<std::string> merged;
  merged.reserve(inherited.size() + variables.size());
  std::set<std::string> replaced;
  for (const auto& entry : inherited) {
    const auto eq = entry.find('=');
    const std::string name = entry.substr(0, eq);
    if (auto it = variables.find(name); it != variables.end()) {
      merged.push_back(name + "=" + it->second);
      replaced.insert(name);
    } else {
      merged.push_back(entry);
    }
  }
  for (const auto& [name, value] : variables) {
    if (!replaced.count(name)) merged.push_back(name + "=" + value);
  }
  return merged;
}

std::optional<std::string> VisibleDevicesFor(const std::vector<std::string>& gpu_ids, bool isolate,
                                             int local_rank) {
  if (gpu_ids.empty()) return std::nullopt;
  if (isolate) return gpu_ids[static_cast<size_t>(local_rank) % gpu_ids.size()];
  std::string all;
  for (const auto& id : gpu_ids) all += (all.empty() ? "" : ",") + id;
  return all;
}

}  // namespace muster
