// SLURM's compact list syntaxes, parsed without calling `scontrol`.
//
//   SLURM_JOB_NODELIST   "n1", "n[1-3]", "node[01-04,7],gpu5", "rack[1-2]-n[3,5]"
//   SLURM_TASKS_PER_NODE "2(x3),1": 2 tasks on each of the first 3 nodes, then 1
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace muster::runtime {

// The first host a SLURM node list names, with the zero padding written in
// the list ("node[01-04]" -> "node01"). The whole list is validated: nullopt
// when any part is malformed (unclosed or nested brackets, an empty name or
// range, a range whose end is below its start, a non-digit inside brackets).
std::optional<std::string> FirstHostOfNodeList(std::string_view node_list);

// The task count of node `node_index` (0-based, SLURM_NODEID) in a
// SLURM_TASKS_PER_NODE value; nullopt when the value is malformed or has
// fewer nodes than node_index + 1.
std::optional<int> TasksOnNode(std::string_view tasks_per_node, int node_index);

// The master port of a SLURM job that sets no MASTER_PORT, computed alike on
// every node of the job: 20000 + job_id % 40001, so within 20000..60000 and
// different for jobs with neighbouring ids. A port already taken makes the
// store's bind fail loudly; MASTER_PORT then picks another.
int MasterPortForSlurmJob(uint64_t job_id);

}  // namespace muster::runtime
