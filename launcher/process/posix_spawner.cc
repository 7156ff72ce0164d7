#include "launcher/process/posix_spawner.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "common/clock.h"
#include "launcher/process/exec_child.h"

namespace muster {
namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// How long a worker forked by the warm process may take to become this
// process's child (its middle process tearing down its copy of the warm
// process: milliseconds). Past it, an ECHILD is an unknown end.
constexpr std::chrono::seconds kAdoptionBound{10};

struct PipePair {
  int read_end = -1;
  int write_end = -1;
  ~PipePair() {
    if (read_end >= 0) close(read_end);
    if (write_end >= 0) close(write_end);
  }
  bool Open() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return false;
    read_end = fds[0];
    write_end = fds[1];
    return true;
  }
  int ReleaseRead() { return std::exchange(read_end, -1); }
  int ReleaseWrite() { return std::exchange(write_end, -1); }
};

}  // namespace

struct PosixSpawner::Child {
  Child(asio::io_context& io, uint64_t t, pid_t p, int pidfd, int out_fd, int err_fd,
        int progress_fd, int control)
      : tag(t),
        pid(p),
        control_fd(control),
        exit_watch(io, pidfd),
        retry(io),
        out(io, out_fd),
        err(io, err_fd),
        progress(io, progress_fd) {}
  ~Child() {
    if (control_fd >= 0) close(control_fd);
  }
  uint64_t tag;
  bool output_released = false;
  pid_t pid;
  int control_fd;  // the write end of the control pipe (non-blocking)
  bool reaped = false;
  // Forked by the warm process: until then waitpid() may say ECHILD (its
  // middle process has not exited yet), which is not an end.
  std::optional<Time> adopt_until;
  // The child's pidfd: readable once it exited. Reaped with WNOHANG only, so
  // a wake-up that comes early can never block the agent's one thread.
  asio::posix::stream_descriptor exit_watch;
  asio::steady_timer retry;
  asio::posix::stream_descriptor out;
  asio::posix::stream_descriptor err;
  asio::posix::stream_descriptor progress;
  std::array<char, 16384> out_buffer;
  std::array<char, 16384> err_buffer;
  std::array<char, 512> progress_buffer;
  int open_parts = 4;  // stdout, stderr, progress, the process itself
};

PosixSpawner::PosixSpawner(asio::io_context& io) : io_(io) {}

PosixSpawner::~PosixSpawner() {
  // The agent is going away and must leave no worker behind.
  for (auto& [id, child] : children_) {
    if (!child->reaped) SignalGroup(child->pid, SIGKILL);
  }
}

Result<pid_t> PosixSpawner::Spawn(const SpawnRequest& request) {
  // Events are delivered only for children that exist, so checking here
  // keeps every delivery below from meeting a null receiver.
  if (events_ == nullptr) {
    return Status::FailedPrecondition("cannot start '" + request.executable +
                                      "': no receiver for its events (SetEvents)");
  }
  PipePair out, err, progress, control;
  if (!out.Open() || !err.Open() || !progress.Open() || !control.Open()) {
    return Status::IoError(std::string("cannot create output pipes: ") + std::strerror(errno));
  }
  // The agent never waits on a worker: its end of the control pipe does not block.
  if (fcntl(control.write_end, F_SETFL, O_NONBLOCK) != 0) {
    return Status::IoError(std::string("cannot set up the control pipe: ") + std::strerror(errno));
  }
  if (warm_ != nullptr && warm_->state() != WarmProcess::State::kOff) {
    // Strays exist only once a warm process made the agent a subreaper.
    if (!strays_) ReapStraysFromNowOn();
    if (const std::optional<pid_t> pid = warm_->Fork(
            request, {out.write_end, err.write_end, progress.write_end, control.read_end})) {
      return Track(request, *pid, out.ReleaseRead(), err.ReleaseRead(), progress.ReleaseRead(),
                   control.ReleaseWrite(), /*adopting=*/true);
    }
  }

  std::vector<const char*> envp;
  envp.reserve(request.env.size() + 1);
  for (const auto& entry : request.env) envp.push_back(entry.c_str());
  envp.push_back(nullptr);
  // argv[0] is the executable's path, as Boost.Process gave it before.
  std::vector<const char*> argv;
  argv.reserve(request.argv.size() + 1);
  argv.push_back(request.executable.c_str());
  for (size_t i = 1; i < request.argv.size(); ++i) argv.push_back(request.argv[i].c_str());
  argv.push_back(nullptr);

  // Whatever the agent buffered comes out before anything the worker prints
  // (and is not duplicated by the fork() of a sanitizer build).
  std::fflush(nullptr);
  Result<pid_t> started =
      ForkExec({request.executable.c_str(), argv.data(), envp.data(), out.write_end, err.write_end,
                progress.write_end, control.read_end});
  if (!started.ok()) return started.status();
  return Track(request, *started, out.ReleaseRead(), err.ReleaseRead(), progress.ReleaseRead(),
               control.ReleaseWrite());
}

Result<pid_t> PosixSpawner::Track(const SpawnRequest& request, pid_t pid, int out_fd, int err_fd,
                                  int progress_fd, int control_fd, bool adopting) {
  // The child is ours and unreaped, so its pid is still its own: watch a
  // pidfd of ours and reap without blocking (a blocking waitpid() once a
  // pidfd looked readable has been seen to freeze the agent).
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    const int error = errno;
    for (int fd : {out_fd, err_fd, progress_fd, control_fd}) close(fd);
    SignalGroup(pid, SIGKILL);
    waitpid(pid, nullptr, 0);  // it was just killed: this returns at once
    return Status::IoError("cannot watch '" + request.executable +
                           "' (pidfd_open: " + std::strerror(error) + ")");
  }

  const uint64_t id = next_id_++;
  auto child = std::make_unique<Child>(io_, request.tag, pid, pidfd, out_fd, err_fd, progress_fd,
                                       control_fd);
  if (adopting) child->adopt_until = Clock::now() + kAdoptionBound;
  children_.emplace(id, std::move(child));
  ReadOutput(id, Stream::kStdout);
  ReadOutput(id, Stream::kStderr);
  ReadProgress(id);
  WaitForExit(id);
  return pid;
}

void PosixSpawner::SetWarmProcess(WarmProcess* warm) { warm_ = warm; }

void PosixSpawner::ReapStraysFromNowOn() {
  // The agent is a child subreaper once a warm process runs: a worker's own
  // children that outlive it become the agent's, and are reaped here.
  strays_.emplace(io_);
  strays_->add(SIGCHLD);
  // Asio installs its handler without SA_RESTART: every child's exit would
  // then interrupt the agent's blocking calls (EINTR). Same handler, restarted
  // calls, and no signal when a child merely stops.
  struct sigaction action {};
  if (sigaction(SIGCHLD, nullptr, &action) == 0) {
    action.sa_flags |= SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &action, nullptr);
  }
  WaitForStrays();
}

void PosixSpawner::WaitForStrays() {
  strays_->async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;
    ReapStrays();
    WaitForStrays();
  });
}

void PosixSpawner::ReapStrays() {
  if (!strays_) return;  // not a subreaper: every child is a worker, reaped by its pidfd
  // Peek at one exited child at a time: a stray is reaped, a worker or the
  // warm process is left to its own watch (which looks again once it has
  // reaped it).
  for (;;) {
    siginfo_t info{};
    if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return;
    if (info.si_pid == warm_->pid()) return;
    for (const auto& [id, child] : children_) {
      if (child->pid == info.si_pid && !child->reaped) return;
    }
    waitpid(info.si_pid, nullptr, WNOHANG);
  }
}

void PosixSpawner::WaitForExit(uint64_t id) {
  children_.at(id)->exit_watch.async_wait(
      asio::posix::descriptor_base::wait_read,
      [this, id](const error_code& ec) { OnExitReadable(id, ec); });
}

void PosixSpawner::OnExitReadable(uint64_t id, const boost::system::error_code& ec) {
  auto it = children_.find(id);
  if (it == children_.end()) return;
  Child& c = *it->second;
  int status = 0;
  const pid_t reaped = ec ? -1 : waitpid(c.pid, &status, WNOHANG);
  const bool adopting =
      reaped < 0 && errno == ECHILD && c.adopt_until && Clock::now() < *c.adopt_until;
  if (adopting) {
    // Forked by the warm process: ours once its middle process has exited.
    c.retry.expires_after(std::chrono::milliseconds(2));
    c.retry.async_wait([this, id](const error_code& retry_ec) {
      if (!retry_ec && children_.count(id)) OnExitReadable(id, retry_ec);
    });
    return;
  }
  if (reaped == 0) {
    // Woken before the exit. Should the readiness be stale and stay, a
    // pause keeps this from spinning: look again in 20 ms.
    c.retry.expires_after(std::chrono::milliseconds(20));
    c.retry.async_wait([this, id](const error_code& retry_ec) {
      if (!retry_ec && children_.count(id)) WaitForExit(id);
    });
    return;
  }
  if (reaped < 0) {
    // Not ours to reap any more (ECHILD) or the watch failed: report an
    // unknown end rather than wait forever.
    spdlog::warn("cannot reap worker pid={}: {}", c.pid, ec ? ec.message() : std::strerror(errno));
    status = W_EXITCODE(255, 0);
  }
  c.reaped = true;
  events_->OnExit(c.tag, c.pid, status);
  if (--c.open_parts == 0) Release(id);
  ReapStrays();
}

void PosixSpawner::ReadOutput(uint64_t id, Stream stream) {
  Child& child = *children_.at(id);
  auto& descriptor = stream == Stream::kStdout ? child.out : child.err;
  auto& buffer = stream == Stream::kStdout ? child.out_buffer : child.err_buffer;
  descriptor.async_read_some(asio::buffer(buffer), [this, id, stream](error_code ec, size_t n) {
    auto it = children_.find(id);
    if (it == children_.end()) return;
    Child& c = *it->second;
    auto& buf = stream == Stream::kStdout ? c.out_buffer : c.err_buffer;
    if (n > 0 && !c.output_released) {
      events_->OnOutput(c.tag, stream, std::string_view(buf.data(), n));
    }
    if (!ec && !c.output_released) {
      ReadOutput(id, stream);
      return;
    }
    if (!c.output_released) events_->OnOutputClosed(c.tag, stream);
    if (--c.open_parts == 0) Release(id);
  });
}

void PosixSpawner::ReadProgress(uint64_t id) {
  Child& child = *children_.at(id);
  child.progress.async_read_some(
      asio::buffer(child.progress_buffer), [this, id](error_code ec, size_t n) {
        auto it = children_.find(id);
        if (it == children_.end()) return;
        Child& c = *it->second;
        if (n > 0 && !c.output_released) {
          events_->OnProgress(c.tag, std::string_view(c.progress_buffer.data(), n));
        }
        if (!ec && !c.output_released) {
          ReadProgress(id);
          return;
        }
        if (ec == asio::error::eof && !c.output_released && !c.reaped) {
          events_->OnProgressClosed(c.tag);
        }
        if (--c.open_parts == 0) Release(id);
      });
}

Status PosixSpawner::SendControl(uint64_t tag, std::string_view line) {
  for (auto& [id, child] : children_) {
    if (child->tag != tag || child->reaped) continue;
    // A line is far below PIPE_BUF: the write is whole or fails.
    const ssize_t n = write(child->control_fd, line.data(), line.size());
    if (n == static_cast<ssize_t>(line.size())) return Status::Ok();
    return Status::IoError("cannot write to the control pipe of pid " + std::to_string(child->pid) +
                           ": " + (n < 0 ? std::strerror(errno) : "short write"));
  }
  return Status::NotFound("no running worker has tag " + std::to_string(tag));
}

void PosixSpawner::CloseOutput(uint64_t tag) {
  for (auto& [id, child] : children_) {
    if (child->tag != tag || child->output_released) continue;
    // Closing cancels the pending reads; their handlers then count the parts
    // down, so the child is released once its exit has been seen too.
    child->output_released = true;
    boost::system::error_code ignored;
    child->out.close(ignored);
    child->err.close(ignored);
    child->progress.close(ignored);
  }
}

void PosixSpawner::Release(uint64_t id) {
  // Defer destruction: we may be inside one of this child's own handlers.
  asio::post(io_, [this, id] { children_.erase(id); });
}

void PosixSpawner::SignalGroup(pid_t pid, int sig) {
  if (pid <= 0) return;
  // Only the group: the worker leads it, and signalling a bare pid that was
  // already reaped could hit an unrelated process that reused it.
  kill(-pid, sig);
}

void PosixSpawner::SignalProcess(pid_t pid, int sig) {
  if (pid <= 0) return;
  kill(pid, sig);
}

}  // namespace muster
