// ProgressReporter: tells the agent that this worker is making progress, for
// muster's hang detection (--hang-timeout). muster gives every worker a pipe
// and names its descriptor in MUSTER_PROGRESS_FD; a report is the step number
// as one decimal line; "inject N" says the worker carried out fault N of
// muster's --inject plan. Under another launcher (or none) there is no pipe and
// reports cost nothing.
//
//   auto progress = ProgressReporter::FromProcessEnv();
//   for (...) { Step(); progress.Report(step); }
//
// Contract: Report never blocks and never fails the caller: the descriptor is
// non-blocking, and a report that does not fit (the agent is behind) is
// dropped, since the next one says the same and more. A descriptor that is
// not a pipe or FIFO is ignored, so a stale MUSTER_PROGRESS_FD cannot make
// the worker write into an unrelated file.
//
// Thread-safety: Report may be called from any one thread at a time.
#pragma once

#include <cstdint>

#include "common/env_lookup.h"

namespace muster::runtime {

class ProgressReporter {
 public:
  // No pipe: Report does nothing.
  ProgressReporter() = default;
  // Reads MUSTER_PROGRESS_FD through `env`.
  static ProgressReporter FromEnv(const EnvLookup& env);
  static ProgressReporter FromProcessEnv();

  bool enabled() const { return fd_ >= 0; }
  void Report(int64_t step) const;
  // Tells the agent this worker carried out fault `index` of its --inject
  // plan (worker_runtime/fault): the line "inject N".
  void ReportInjected(int index) const;

 private:
  explicit ProgressReporter(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace muster::runtime
