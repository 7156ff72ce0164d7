// ProcessSpawner: the one way the agent creates and signals worker processes:
// nothing else in the launcher calls fork, exec or kill on a worker.
// The POSIX implementation forks real processes; unit tests use a fake that
// records requests, so supervision logic is tested without processes.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "launcher/plan/worker_env.h"

namespace muster {

enum class Stream { kStdout, kStderr };

// Every spawned process also gets a progress pipe as kProgressFd, and the
// read end of a control pipe as kControlFd (plan/worker_env.h): what a
// worker writes to the first arrives as OnProgress events, what SendControl
// writes arrives on the second (control/PROTOCOL.md).

struct SpawnRequest {
  uint64_t tag = 0;               // chosen by the caller; echoed in every event of this process
  std::string executable;         // absolute path
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> env;   // complete environment, "NAME=value"
};

// Receives what spawned processes do. Called on the spawner's event loop.
class SpawnEvents {
 public:
  virtual ~SpawnEvents() = default;
  virtual void OnOutput(uint64_t tag, Stream stream, std::string_view bytes) = 0;
  // The stream reached end of file (every writer, grandchildren too, closed it).
  virtual void OnOutputClosed(uint64_t tag, Stream stream) = 0;
  // The process terminated; `wait_status` is the raw waitpid() status.
  virtual void OnExit(uint64_t tag, pid_t pid, int wait_status) = 0;
  // The process wrote `bytes` to its progress pipe (kProgressFd).
  virtual void OnProgress(uint64_t /*tag*/, std::string_view /*bytes*/) {}
  // The progress pipe reached end of file while the process runs: it (and
  // every process that shares the pipe) closed it, and reports no more.
  virtual void OnProgressClosed(uint64_t /*tag*/) {}
};

class ProcessSpawner {
 public:
  virtual ~ProcessSpawner() = default;
  ProcessSpawner(const ProcessSpawner&) = delete;
  ProcessSpawner& operator=(const ProcessSpawner&) = delete;

  // Where the events of spawned processes go. The agent that owns the
  // workers calls it once, before its first Spawn. REQUIRES: `events`
  // outlives every event delivery (the spawner's event loop runs no longer).
  virtual void SetEvents(SpawnEvents& events) = 0;

  // Starts a process that leads its own process group and is SIGKILLed by the
  // kernel if the agent dies. Its stdout/stderr are delivered as OnOutput
  // events, and what it writes to kProgressFd as OnProgress events. Returns
  // the pid, or an error quoting the executable.
  virtual Result<pid_t> Spawn(const SpawnRequest& request) = 0;

  // Sends `sig` to the whole process group led by `pid` (the worker and any
  // children it made). A group that no longer exists is not an error.
  virtual void SignalGroup(pid_t pid, int sig) = 0;

  // Sends `sig` to the process `pid` alone, not to its children (fault
  // injection stops or kills one worker this way). REQUIRES: `pid` came from
  // Spawn and its exit has not been reported yet, so it cannot have been
  // reused by an unrelated process.
  virtual void SignalProcess(pid_t pid, int sig) = 0;

  // Writes `line` (one whole line, '\n' included) to the control pipe of the
  // process spawned with `tag`. Never blocks: a pipe without room for it, a
  // process that exited or closed its end, or an unknown tag is an error.
  virtual Status SendControl(uint64_t tag, std::string_view line) = 0;

  // Stops reading the output of the process spawned with `tag` and closes its
  // pipes, even if a grandchild still holds them open. No further OnOutput or
  // OnOutputClosed events come for it.
  virtual void CloseOutput(uint64_t /*tag*/) {}

 protected:
  ProcessSpawner() = default;
};

}  // namespace muster
