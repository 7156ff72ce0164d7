// SLURM's compact lists that only the worker runtime reads, parsed without
// calling `scontrol`, and the port a SLURM job derives from its id.
//
//   SLURM_TASKS_PER_NODE "2(x3),1": 2 tasks on each of the first 3 nodes, then 1
//
// SLURM_JOB_NODELIST ("node[01-04,7],gpu5") is a host list: common/host_list.h.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace muster::runtime {

// The task count of node `node_index` (0-based, SLURM_NODEID) in a
// SLURM_TASKS_PER_NODE value; nullopt when the value is malformed or has
// fewer nodes than node_index + 1.
std::optional<int> TasksOnNode(std::string_view tasks_per_node, int node_index);

// The master port of a SLURM job that sets no MASTER_PORT, computed alike on
// every node of the job: 20000 + job_id % 12768, so within 20000..32767
// (below Linux's ephemeral ports, 32768 and up, which any process may hold) and
// different for jobs with neighbouring ids. A port already taken makes the
// store's bind fail loudly; MASTER_PORT then picks another.
int MasterPortForSlurmJob(uint64_t job_id);

}  // namespace muster::runtime
