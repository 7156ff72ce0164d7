#include "launcher/posix_spawner.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/process/v2/process.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace muster {
namespace asio = boost::asio;
namespace bp = boost::process::v2;

namespace {

constexpr unsigned kCloseRangeCloexec = 1U << 2;  // CLOSE_RANGE_CLOEXEC, Linux 5.11

// Runs in the forked child before exec: makes the worker a process-group
// leader (so a signal reaches its children too), ties its life to the agent
// thread, restores default signal handling and wires its output pipes.
struct WorkerSetup {
  const char* const* env;
  int stdout_fd;
  int stderr_fd;
  int progress_fd;
  int control_fd;
  pid_t agent_pid;

  bp::error_code on_setup(bp::posix::default_launcher& launcher, const bp::filesystem::path&,
                          const char* const*&) {
    // Boost's process_environment replaces and mis-links; hand the launcher our
    // prepared environ array directly.
    launcher.env = env;
    return {};
  }

  bp::error_code on_exec_setup(bp::posix::default_launcher&, const bp::filesystem::path&,
                               const char* const*&) {
    // A new session: the worker leads its own process group (a signal to the
    // group reaches its children too) and has no controlling terminal, so
    // reading a terminal never stops it with SIGTTIN.
    if (setsid() < 0) return {errno, bp::system_category()};
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return {errno, bp::system_category()};
    // The agent may have died between fork() and prctl(): then nobody would
    // ever send the death signal.
    if (getppid() != agent_pid) _exit(128 + SIGKILL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    // The agent ignores SIGPIPE; an ignored disposition survives exec.
    signal(SIGPIPE, SIG_DFL);
    if (dup2(stdout_fd, STDOUT_FILENO) < 0 || dup2(stderr_fd, STDERR_FILENO) < 0) {
      return {errno, bp::system_category()};
    }
    // Asio's sockets (the store's listener, its connections) are not
    // close-on-exec, and Boost 1.81's own fd cleanup skips some: mark every fd
    // above stderr close-on-exec so no worker inherits them.
    if (syscall(SYS_close_range, 3U, ~0U, kCloseRangeCloexec) != 0) {
      for (int fd = 3; fd < 4096; ++fd) fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    // The progress and control pipes, after the sweep above. The control
    // pipe moves out of the way first when it sits where the progress pipe
    // goes.
    if (control_fd == kProgressFd) {
      control_fd = fcntl(control_fd, F_DUPFD, kControlFd + 1);
      if (control_fd < 0) return {errno, bp::system_category()};
    }
    if (!PlaceAt(progress_fd, kProgressFd) || !PlaceAt(control_fd, kControlFd)) {
      return {errno, bp::system_category()};
    }
    return {};
  }

  // Makes `fd` the inherited descriptor `target`: dup2 clears close-on-exec,
  // except when `fd` already is `target`.
  static bool PlaceAt(int fd, int target) {
    if (fd == target) return fcntl(target, F_SETFD, 0) == 0;
    return dup2(fd, target) >= 0;
  }
};

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
  std::vector<const char*> envp;
  envp.reserve(request.env.size() + 1);
  for (const auto& entry : request.env) envp.push_back(entry.c_str());
  envp.push_back(nullptr);
  std::vector<std::string> args(request.argv.begin() + (request.argv.empty() ? 0 : 1),
                                request.argv.end());

  // A failed exec makes Boost call exit(), which flushes inherited stdio
  // buffers a second time; flush them first.
  std::fflush(nullptr);
  // The agent never waits on a worker: its end of the control pipe does not block.
  if (fcntl(control.write_end, F_SETFL, O_NONBLOCK) != 0) {
    return Status::IoError(std::string("cannot set up the control pipe: ") + std::strerror(errno));
  }
  WorkerSetup setup{envp.data(),        out.write_end,    err.write_end,
                    progress.write_end, control.read_end, getpid()};
  bp::error_code ec;
  bp::process process(io_.get_executor());
  {
    bp::posix::default_launcher launcher;
    process = launcher(io_.get_executor(), ec, request.executable, args, setup);
  }
  if (ec) {
    return Status::IoError("cannot start '" + request.executable + "': " + ec.message());
  }
  const pid_t pid = process.id();
  // Boost's own wait ends in a blocking waitpid() once the pidfd looks
  // readable, which has been seen to happen while the child still ran: the
  // agent then froze. The child is ours and unreaped, so its pid is still
  // its own: watch a pidfd of ours and reap without blocking.
  process.detach();
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    const int error = errno;
    SignalGroup(pid, SIGKILL);
    waitpid(pid, nullptr, 0);  // it was just killed: this returns at once
    return Status::IoError("cannot watch '" + request.executable +
                           "' (pidfd_open: " + std::strerror(error) + ")");
  }

  const uint64_t id = next_id_++;
  children_.emplace(id, std::make_unique<Child>(io_, request.tag, pid, pidfd, out.ReleaseRead(),
                                                err.ReleaseRead(), progress.ReleaseRead(),
                                                control.ReleaseWrite()));
  ReadOutput(id, Stream::kStdout);
  ReadOutput(id, Stream::kStderr);
  ReadProgress(id);
  WaitForExit(id);
  return pid;
}

void PosixSpawner::WaitForExit(uint64_t id) {
  children_.at(id)->exit_watch.async_wait(
      asio::posix::descriptor_base::wait_read,
      [this, id](const bp::error_code& ec) { OnExitReadable(id, ec); });
}

void PosixSpawner::OnExitReadable(uint64_t id, const boost::system::error_code& ec) {
  auto it = children_.find(id);
  if (it == children_.end()) return;
  Child& c = *it->second;
  int status = 0;
  const pid_t reaped = ec ? -1 : waitpid(c.pid, &status, WNOHANG);
  if (reaped == 0) {
    // Woken before the exit. Should the readiness be stale and stay, a
    // pause keeps this from spinning: look again in 20 ms.
    c.retry.expires_after(std::chrono::milliseconds(20));
    c.retry.async_wait([this, id](const bp::error_code& retry_ec) {
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
}

void PosixSpawner::ReadOutput(uint64_t id, Stream stream) {
  Child& child = *children_.at(id);
  auto& descriptor = stream == Stream::kStdout ? child.out : child.err;
  auto& buffer = stream == Stream::kStdout ? child.out_buffer : child.err_buffer;
  descriptor.async_read_some(asio::buffer(buffer), [this, id, stream](bp::error_code ec, size_t n) {
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
      asio::buffer(child.progress_buffer), [this, id](bp::error_code ec, size_t n) {
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
