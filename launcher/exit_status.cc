#include "launcher/exit_status.h"

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

std::string SignalName(int sig) {
  // sigabbrev_np() needs glibc 2.32 and _GNU_SOURCE; a table keeps this portable.
  switch (sig) {
    case SIGHUP:
      return "SIGHUP";
    case SIGINT:
      return "SIGINT";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGILL:
      return "SIGILL";
    case SIGTRAP:
      return "SIGTRAP";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGKILL:
      return "SIGKILL";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGUSR2:
      return "SIGUSR2";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGALRM:
      return "SIGALRM";
    case SIGTERM:
      return "SIGTERM";
    case SIGCHLD:
      return "SIGCHLD";
    case SIGCONT:
      return "SIGCONT";
    case SIGSTOP:
      return "SIGSTOP";
    case SIGTSTP:
      return "SIGTSTP";
    case SIGXCPU:
      return "SIGXCPU";
    case SIGXFSZ:
      return "SIGXFSZ";
    case SIGSYS:
      return "SIGSYS";
    case SIGTTIN:
      return "SIGTTIN";
    case SIGTTOU:
      return "SIGTTOU";
    case SIGWINCH:
      return "SIGWINCH";
    default:
      return "SIG" + std::to_string(sig);
  }
}

int SignalNumber(const std::string& name) {
  for (int sig = 1; sig < NSIG; ++sig) {
    if (SignalName(sig) == name) return sig;
  }
  return 0;
}

}  // namespace muster
