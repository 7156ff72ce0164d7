#include "worker_runtime/bootstrap/slurm_lists.h"

#include <limits>

#include "common/decimal.h"

namespace muster::runtime {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Parses one bracket body "01-04,7" starting after '['; on success returns the
// first range's start (as written, keeping its zero padding) and leaves `pos`
// after the closing ']'.
std::optional<std::string> ParseBracket(std::string_view list, size_t& pos) {
  std::optional<std::string> first;
  for (;;) {
    const size_t lo_begin = pos;
    while (pos < list.size() && IsDigit(list[pos])) ++pos;
    const std::string_view lo = list.substr(lo_begin, pos - lo_begin);
    if (lo.empty()) return std::nullopt;
    if (pos < list.size() && list[pos] == '-') {
      const size_t hi_begin = ++pos;
      while (pos < list.size() && IsDigit(list[pos])) ++pos;
      const std::string_view hi = list.substr(hi_begin, pos - hi_begin);
      const auto lo_value = ParseDecimal(lo, std::numeric_limits<uint64_t>::max());
      const auto hi_value = ParseDecimal(hi, std::numeric_limits<uint64_t>::max());
      if (!lo_value || !hi_value || *hi_value < *lo_value) return std::nullopt;
    }
    if (!first) first = std::string(lo);
    if (pos >= list.size()) return std::nullopt;  // unclosed
    if (list[pos] == ']') {
      ++pos;
      return first;
    }
    if (list[pos] != ',') return std::nullopt;
    ++pos;
  }
}

}  // namespace

std::optional<std::string> FirstHostOfNodeList(std::string_view node_list) {
  std::optional<std::string> first_host;
  size_t pos = 0;
  // One iteration per host expression: name text and bracket groups up to a
  // top-level ',' or the end. Every expression is checked, not only the first,
  // so that a truncated or mangled variable is reported instead of half-used.
  for (;;) {
    std::string host;
    bool empty = true;
    while (pos < node_list.size() && node_list[pos] != ',') {
      const char c = node_list[pos];
      if (c == '[') {
        ++pos;
        auto first = ParseBracket(node_list, pos);
        if (!first) return std::nullopt;
        host += *first;
      } else if (c == ']' || c == ' ' || c == '\t' || c == '\n') {
        return std::nullopt;
      } else {
        host.push_back(c);
        ++pos;
      }
      empty = false;
    }
    if (empty) return std::nullopt;
    if (!first_host) first_host = std::move(host);
    if (pos == node_list.size()) return first_host;
    ++pos;  // the ',' between hosts; a trailing one leaves an empty expression
  }
}

std::optional<int> TasksOnNode(std::string_view tasks_per_node, int node_index) {
  if (node_index < 0) return std::nullopt;
  std::optional<int> found;
  int64_t nodes_seen = 0;
  size_t pos = 0;
  // Entries "N" or "N(xR)"; the whole value is validated, as for node lists.
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

int MasterPortForSlurmJob(uint64_t job_id) { return 20000 + static_cast<int>(job_id % 40001); }

}  // namespace muster::runtime
