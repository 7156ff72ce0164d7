// What a worker writes on its progress pipe (MUSTER_PROGRESS_FD), decoded:
// one line per report, either a step number ("42") or "inject N", saying the
// worker carried out fault N of the plan (worker_runtime's ProgressReporter
// writes both), or "stacks", saying it dumps its stacks on
// MUSTER_STACK_SIGNAL (a warm-started worker's step_hooks.py, once).
//
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace muster {

struct ProgressReport {
  int64_t step = -1;          // the newest step of the complete lines; -1: none
  std::vector<int> injected;  // fault indices the worker said it carried out
  bool dumps_stacks = false;  // "stacks": it dumps its stacks on MUSTER_STACK_SIGNAL
};

// Decodes the complete lines of one read; a trailing partial line and lines
// of any other form are ignored (any write still counts as progress).
ProgressReport ParseProgressReport(std::string_view bytes);

}  // namespace muster
