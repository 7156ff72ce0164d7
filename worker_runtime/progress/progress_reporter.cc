#include "worker_runtime/progress/progress_reporter.h"

#include <unistd.h>

#include <charconv>
#include <string>

#include "worker_runtime/progress/inherited_pipe.h"

namespace muster::runtime {

ProgressReporter ProgressReporter::FromEnv(const EnvLookup& env) {
  const int fd = InheritedPipe(env, "MUSTER_PROGRESS_FD");
  if (fd < 0) return {};
  return ProgressReporter(fd);
}

ProgressReporter ProgressReporter::FromProcessEnv() { return FromEnv(SystemEnv()); }

void ProgressReporter::Report(int64_t step) const {
  if (fd_ < 0) return;
  char line[24];
  auto [end, error] = std::to_chars(line, line + sizeof(line) - 1, step);
  if (error != std::errc()) return;
  *end++ = '\n';
  // One write of a few bytes is atomic on a pipe; EAGAIN (the agent is
  // behind) and EPIPE (it is gone; SIGPIPE is the caller's to ignore or not)
  // just drop this report.
  [[maybe_unused]] const ssize_t written = write(fd_, line, static_cast<size_t>(end - line));
}

void ProgressReporter::ReportInjected(int index) const {
  if (fd_ < 0) return;
  const std::string line = "inject " + std::to_string(index) + "\n";
  [[maybe_unused]] const ssize_t written = write(fd_, line.data(), line.size());
}

}  // namespace muster::runtime
