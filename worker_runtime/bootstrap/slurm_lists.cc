#include "worker_runtime/bootstrap/slurm_lists.h"

#include <limits>

#include "common/decimal.h"

namespace muster::runtime {

std::optional<int> TasksOnNode(std::string_view tasks_per_node, int node_index) {
  if (node_index < 0) return std::nullopt;
  std::optional<int> found;
  int64_t nodes_seen = 0;
  size_t pos = 0;
  // Entries "N" or "N(xR)"; the whole value is validated, not only up to
  // node_index, so that a truncated or mangled variable is reported.
  for (;;) {
    const size_t count_end = tasks_per_node.find_first_of(",(", pos);
    const auto tasks =
        ParseDecimal(tasks_per_node.substr(pos, count_end - pos), std::numeric_limits<int>::max());
    if (!tasks) return std::nullopt;
    uint64_t repeat = 1;
    pos = count_end;
    if (pos != std::string_view::npos && tasks_per_node[pos] == '(') {
      if (tasks_per_node.substr(pos, 2) != "(x") return std::nullopt;
      const size_t close = tasks_per_node.find(')', pos);
      if (close == std::string_view::npos) return std::nullopt;
      const auto parsed = ParseDecimal(tasks_per_node.substr(pos + 2, close - pos - 2),
                                       std::numeric_limits<int>::max());
      if (!parsed || *parsed == 0) return std::nullopt;
      repeat = *parsed;
      pos = close + 1;
    }
    if (!found && node_index < nodes_seen + static_cast<int64_t>(repeat)) {
      found = static_cast<int>(*tasks);
    }
    nodes_seen += static_cast<int64_t>(repeat);
    if (pos == std::string_view::npos || pos == tasks_per_node.size()) break;
    if (tasks_per_node[pos] != ',') return std::nullopt;
    ++pos;
  }
  return found;
}

int MasterPortForSlurmJob(uint64_t job_id) { return 20000 + static_cast<int>(job_id % 12768); }

}  // namespace muster::runtime
