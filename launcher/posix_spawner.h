// PosixSpawner: ProcessSpawner on fork/exec (Boost.Process v2) and an Asio
// event loop. Output pipes and exit notifications (pidfd) are serviced by
// `io`; events go where SetEvents says (Spawn fails before it was called).
// Not thread-safe: use from the io thread only, and that thread must outlive
// the workers (PR_SET_PDEATHSIG follows the thread that forked).
#pragma once

#include <boost/asio/io_context.hpp>
#include <map>
#include <memory>

#include "launcher/process_spawner.h"

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

 private:
  struct Child;
  void ReadOutput(uint64_t id, Stream stream);
  void ReadProgress(uint64_t id);
  // Reports the child's exit once its pidfd says it exited and waitpid
  // (WNOHANG) confirms it.
  void WaitForExit(uint64_t id);
  void OnExitReadable(uint64_t id, const boost::system::error_code& ec);
  void Release(uint64_t id);

  boost::asio::io_context& io_;
  SpawnEvents* events_ = nullptr;  // set by SetEvents, before any child exists
  // Keyed by a serial number, never by pid: a pid can be reused while an
  // earlier child's pipes are still open.
  std::map<uint64_t, std::unique_ptr<Child>> children_;
  uint64_t next_id_ = 1;
};

}  // namespace muster
