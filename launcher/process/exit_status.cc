#include "launcher/process/exit_status.h"

#include <sys/wait.h>

#include <csignal>

namespace muster {

ExitStatus ExitStatus::FromWaitStatus(int wait_status) {
  if (WIFSIGNALED(wait_status)) return Killed(WTERMSIG(wait_status));
  if (WIFEXITED(wait_status)) return Exited(WEXITSTATUS(wait_status));
  // Stopped/continued statuses never reach here: we wait only for termination.
  return Exited(wait_status);
}

std::string ExitStatus::Describe() const {
  if (signaled) return "signal " + std::to_string(signal) + " (" + SignalName(signal) + ")";
  return "exit code " + std::to_string(code);
}

}  // namespace muster
