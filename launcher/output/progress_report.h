// What a worker writes on its progress pipe (MUSTER_PROGRESS_FD), decoded:
// one line per report, either a step number ("42"), a step number and the
// step's own compute time in microseconds ("42 18234", the step hooks'), or
// "inject N", saying the
// worker carried out fault N of the plan (worker_runtime's ProgressReporter
// writes both), or "stacks FD", saying it dumps its stacks on
// MUSTER_STACK_SIGNAL into its descriptor FD (a warm-started worker's
// step_hooks.py, once).
//
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace muster {

struct ProgressReport {
  int64_t step = -1;  // the newest step of the complete lines; -1: none
  // The compute time (microseconds) the newest step's line carried, if any.
  std::optional<int64_t> compute_us = {};
  std::vector<int> injected;  // fault indices the worker said it carried out
  // "stacks FD": it dumps its stacks on MUSTER_STACK_SIGNAL into its
  // descriptor FD (a memfd).
  std::optional<int> stacks_fd = {};
};

// Decodes the complete lines of one read; a trailing partial line and lines
// of any other form are ignored (any write still counts as progress).
ProgressReport ParseProgressReport(std::string_view bytes);

}  // namespace muster
