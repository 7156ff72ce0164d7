// PosixSpawner: ProcessSpawner on fork/exec (ForkExec, exec_child.h) and an
// Asio event loop. Output pipes and exit notifications (pidfd) are serviced by
// `io`; events go where SetEvents says (Spawn fails before it was called).
// Not thread-safe: use from the io thread only, and that thread must outlive
// the workers (PR_SET_PDEATHSIG follows the thread that forked).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <map>
#include <memory>
#include <optional>

#include "launcher/process/process_spawner.h"
#include "launcher/process/warm_process.h"

namespace muster {

class PosixSpawner final : public ProcessSpawner {
 public:
  explicit PosixSpawner(boost::asio::io_context& io);
  ~PosixSpawner() override;

  void SetEvents(SpawnEvents& events) override { events_ = &events; }
  Result<pid_t> Spawn(const SpawnRequest& request) override;
  void SignalGroup(pid_t pid, int sig) override;
  void SignalProcess(pid_t pid, int sig) override;
  Status SendControl(uint64_t tag, std::string_view line) override;
  void CloseOutput(uint64_t tag) override;

  // Python workers come from `warm` when it can fork them (warm_process.h),
  // else they start cold. Once a warm process was started (the agent is then
  // a child subreaper), the agent's stray children are reaped too.
  // REQUIRES: `warm` outlives this spawner's use of it; nullptr turns warm
  // starts off.
  void SetWarmProcess(WarmProcess* warm);

 private:
  struct Child;
  void ReadOutput(uint64_t id, Stream stream);
  void ReadProgress(uint64_t id);
  // Reports the child's exit once its pidfd says it exited and waitpid
  // (WNOHANG) confirms it.
  void WaitForExit(uint64_t id);
  void OnExitReadable(uint64_t id, const boost::system::error_code& ec);
  void Release(uint64_t id);
  // Watches a started process: its pipes' read ends (and the control pipe's
  // write end), its exit. Takes ownership of the descriptors.
  // `adopting`: forked by the warm process, not yet necessarily our child.
  Result<pid_t> Track(const SpawnRequest& request, pid_t pid, int out_fd, int err_fd,
                      int progress_fd, int control_fd, bool adopting = false);
  // Reaps strays on SIGCHLD from now on.
  void ReapStraysFromNowOn();
  void WaitForStrays();
  // Reaps exited children that are neither workers nor the warm process.
  void ReapStrays();

  boost::asio::io_context& io_;
  SpawnEvents* events_ = nullptr;  // set by SetEvents, before any child exists
  // Keyed by a serial number, never by pid: a pid can be reused while an
  // earlier child's pipes are still open.
  std::map<uint64_t, std::unique_ptr<Child>> children_;
  uint64_t next_id_ = 1;
  WarmProcess* warm_ = nullptr;
  std::optional<boost::asio::signal_set> strays_;  // SIGCHLD, once a warm process was started
};

}  // namespace muster
