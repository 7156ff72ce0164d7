// ForkExec: starts one worker process with the setup every worker gets, and
// returns once the worker runs its program or has failed to.
//
// Before it execs, the child:
//   - starts a new session (setsid): it leads its own process group, so a
//     signal to the group reaches its children too, and it has no controlling
//     terminal, so reading one never stops it with SIGTTIN;
//   - asks for SIGKILL when the calling *thread* exits (PR_SET_PDEATHSIG), and
//     exits at once with 128 + SIGKILL when the caller died before that
//     request could take effect (getppid() no longer names the caller);
//   - resets every signal the caller catches, and SIGPIPE, to its default
//     disposition (other ignored signals stay ignored, as across any exec),
//     and unblocks every signal;
//   - gets `stdout_fd` as 1, `stderr_fd` as 2, `progress_fd` as kProgressFd (3)
//     and `control_fd` as kControlFd (4), all without close-on-exec; stdin is
//     inherited; every other descriptor from 3 up is close-on-exec, so the
//     worker inherits nothing else (the agent's sockets are not close-on-exec);
//   - executes `executable` with `argv` and exactly `envp` (no PATH search).
//
// How: clone(CLONE_VM | CLONE_VFORK) with a stack of its own, as posix_spawn
// does. The child shares the caller's memory and runs only async-signal-safe
// system calls, so no page table is copied and nothing of the caller (its
// Asio reactor, its threads) is re-created in the child; the calling thread
// sleeps until the child has called execve or exited, every signal blocked
// meanwhile so that none of the caller's handlers runs in the child. Builds
// with a sanitizer use fork() instead (the sanitizers' per-thread state must
// not be shared): the same child code, the same contract.
//
// A failure in the child (exec or a setup step) comes back through a
// close-on-exec pipe; the child is then reaped here, and the error quotes the
// executable and the step:
//   "cannot start '/opt/w/train': exec: Permission denied"
//   "cannot start '/opt/w/train': setsid: Operation not permitted"
// On success the caller owns the child: it must reap it (waitpid or a pidfd).
//
// Thread-safety: may be called from several threads at once. REQUIRES: the
// four descriptors are open; `argv` and `envp` are null-terminated arrays
// that, like `executable`, stay valid for the call; the calling thread
// outlives the worker, or the worker is killed when it ends.
#pragma once

#include <sys/types.h>

#include "common/status.h"

namespace muster {

struct ExecChildSpec {
  const char* executable = nullptr;   // absolute path, execve'd as is
  const char* const* argv = nullptr;  // null-terminated, argv[0] included
  const char* const* envp = nullptr;  // null-terminated, the whole environment
  int stdout_fd = -1;                 // becomes 1
  int stderr_fd = -1;                 // becomes 2
  int progress_fd = -1;               // becomes kProgressFd
  int control_fd = -1;                // becomes kControlFd
};

// Starts the child as described above; returns its pid, or an error naming
// `spec.executable` with no child left behind.
Result<pid_t> ForkExec(const ExecChildSpec& spec);

}  // namespace muster
