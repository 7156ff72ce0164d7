#include "worker_runtime/progress/progress_reporter.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <string>

#include "common/decimal.h"

namespace muster::runtime {

ProgressReporter ProgressReporter::FromEnv(const EnvLookup& env) {
  const auto text = env("MUSTER_PROGRESS_FD");
  if (!text) return {};
  const auto fd = ParseDecimal(*text, 1 << 20);
  if (!fd) return {};
  struct stat info {};
  if (fstat(static_cast<int>(*fd), &info) != 0 || !S_ISFIFO(info.st_mode)) return {};
  const int flags = fcntl(static_cast<int>(*fd), F_GETFL);
  if (flags < 0 || fcntl(static_cast<int>(*fd), F_SETFL, flags | O_NONBLOCK) != 0) return {};
  return ProgressReporter(static_cast<int>(*fd));
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
