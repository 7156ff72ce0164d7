// PosixSpawner: ProcessSpawner on fork/exec (Boost.Process v2) and an Asio
// event loop. Output pipes and exit notifications (pidfd) are serviced by
// `io`; events go to `events`. Not thread-safe: use from the io thread only,
// and that thread must outlive the workers (PR_SET_PDEATHSIG follows the
// thread that forked).
#pragma once

#include <boost/asio/io_context.hpp>
#include <map>
#include <memory>

#include "launcher/process_spawner.h"

namespace muster {

class PosixSpawner final : public ProcessSpawner {
 public:
  PosixSpawner(boost::asio::io_context& io, SpawnEvents& events);
  ~PosixSpawner() override;

  Result<pid_t> Spawn(const SpawnRequest& request) override;
  void SignalGroup(pid_t pid, int sig) override;

 private:
  struct Child;
  void ReadOutput(Child& child, Stream stream);
  void Forget(pid_t pid);

  boost::asio::io_context& io_;
  SpawnEvents& events_;
  std::map<pid_t, std::unique_ptr<Child>> children_;
};

}  // namespace muster
