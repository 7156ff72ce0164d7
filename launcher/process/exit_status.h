// ExitStatus: how a worker ended, decoded from a waitpid() status once, so no
// caller confuses "exit(15)" with "killed by SIGTERM".
#pragma once

#include <string>

#include "common/signal_names.h"

namespace muster {

// The shell convention for a process ended by signal `sig`: 128 + signal.
constexpr int ExitCodeOfSignal(int sig) { return 128 + sig; }

struct ExitStatus {
  bool signaled = false;
  int code = 0;    // exit code when !signaled
  int signal = 0;  // terminating signal when signaled

  static ExitStatus FromWaitStatus(int wait_status);
  static ExitStatus Exited(int code) { return {false, code, 0}; }
  static ExitStatus Killed(int sig) { return {true, 0, sig}; }

  bool success() const { return !signaled && code == 0; }
  // The shell convention muster exits with: the code, or 128 + signal.
  int ShellCode() const { return signaled ? ExitCodeOfSignal(signal) : code; }
  // "exit code 7" or "signal 11 (SIGSEGV)".
  std::string Describe() const;
};

}  // namespace muster
