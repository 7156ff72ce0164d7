// WarmProcess: the node's warm Python process (launcher/process/warm/zygote.py). It
// imports what the workers' script imports once, then forks each Python
// worker from that state, so a start or restart pays neither the
// interpreter's start nor `import torch`.
//
// The warm process runs in the workers' environment minus their per-rank
// variables. A worker comes from it only when nothing it would read at import
// differs (warm_fit.h); the forked worker becomes the agent's own child (the
// agent is a child subreaper), so PosixSpawner supervises, signals and reaps
// it exactly as one it exec'd. Anything that goes wrong (an import that
// fails, a thread or CUDA initialised before the fork, the process gone, a
// fork that fails) makes that worker start cold: Fork returns nullopt and the
// reason is logged once, as event=warm_fallback. The job never fails because
// of the warm process.
//
// Not thread-safe: use from the io thread, the one that forks workers.
#pragma once

#include <sys/types.h>

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "launcher/process/process_spawner.h"

namespace muster {

struct WarmSettings {
  std::string python;                // absolute path: the workers' interpreter
  std::vector<std::string> command;  // a worker's interpreter arguments: {"-u", "x.py", ...}
  std::vector<std::string> env;      // the workers' environment without per-rank variables
  std::vector<std::string> imports;  // --warm-import: imported besides the script's torch modules
  std::chrono::milliseconds ready_timeout{60000};  // past it, workers start cold
};

// A worker's descriptors, in the order zygote.py places them (1, 2, 3, 4).
using WarmChildFds = std::array<int, 4>;

class WarmProcess {
 public:
  enum class State { kOff, kStarting, kReady, kUnusable };

  explicit WarmProcess(boost::asio::io_context& io);
  ~WarmProcess();  // kills the warm process
  WarmProcess(const WarmProcess&) = delete;
  WarmProcess& operator=(const WarmProcess&) = delete;

  // Makes this process a child subreaper (forked workers become its
  // children) and starts the warm process. A failure to start is not an
  // error: the state is kUnusable and workers start cold.
  void Start(WarmSettings settings);

  // Calls `then` on the io loop once the warm process is ready or unusable
  // (at once when it already is, or was never started).
  void WhenSettled(std::function<void()> then);

  State state() const { return state_; }
  // The warm process's pid; 0 when none runs.
  pid_t pid() const { return pid_; }

  // Forks a worker for `request` with `fds` as its stdout, stderr, progress
  // and control descriptors (the caller keeps and closes its copies). Its
  // pid: it leads its own process group already, and becomes this process's
  // child within milliseconds (once the middle process has exited; until
  // then waitpid() says ECHILD). nullopt when it must start cold (the reason
  // logged once).
  std::optional<pid_t> Fork(const SpawnRequest& request, const WarmChildFds& fds);

 private:
  void Settle(State state, const std::string& why);
  void WatchChannel();
  void OnChannelReadable();
  void WatchExit();
  void Fallback(const std::string& reason);
  void Kill();
  // Kills it and settles unusable for `why`: every later worker starts cold.
  void GiveUp(const std::string& why);

  boost::asio::io_context& io_;
  WarmSettings settings_;
  State state_ = State::kOff;
  Time started_at_;
  pid_t pid_ = 0;
  int channel_ = -1;  // our end of the SOCK_SEQPACKET pair
  std::optional<boost::asio::posix::stream_descriptor> channel_watch_;
  std::optional<boost::asio::posix::stream_descriptor> exit_watch_;
  boost::asio::steady_timer ready_timer_;
  std::vector<std::function<void()>> on_settled_;
  std::set<std::string> fallbacks_logged_;
  std::string unusable_reason_;
};

}  // namespace muster
