#include "launcher/posix_spawner.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "launcher/exec_child.h"
#include <set>

namespace muster {
namespace asio = boost::asio;

namespace {

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

// This process's children that have exited and are not reaped yet, read
// from /proc (a process's stat names its parent and its state).
std::vector<pid_t> ZombieChildren() {
  std::vector<pid_t> zombies;
  const pid_t self = getpid();
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return zombies;
  while (const dirent* entry = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char stat[512];
    const ssize_t n = read(fd, stat, sizeof(stat) - 1);
    close(fd);
    if (n <= 0) continue;
    stat[n] = '\0';
    // "pid (comm) S ppid ...": comm may hold spaces and parentheses.
    const char* close_paren = std::strrchr(stat, ')');
    char state = 0;
    long ppid = 0;
    if (close_paren != nullptr && std::sscanf(close_paren + 1, " %c %ld", &state, &ppid) == 2 &&
        state == 'Z' && ppid == self) {
      zombies.push_back(static_cast<pid_t>(pid));
    }
  }
  closedir(proc);
  return zombies;
}

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
  // argv[0] is the executable's path, as Boost.Process gave it before.
  std::vector<const char*> argv;
  argv.reserve(request.argv.size() + 1);
  argv.push_back(request.executable.c_str());
  for (size_t i = 1; i < request.argv.size(); ++i) argv.push_back(request.argv[i].c_str());
  argv.push_back(nullptr);

  // Whatever the agent buffered comes out before anything the worker prints
  // (and is not duplicated by the fork() of a sanitizer build).
  std::fflush(nullptr);
  // The agent never waits on a worker: its end of the control pipe does not block.
  if (fcntl(control.write_end, F_SETFL, O_NONBLOCK) != 0) {
    return Status::IoError(std::string("cannot set up the control pipe: ") + std::strerror(errno));
  }
  Result<pid_t> started = ForkExec({request.executable.c_str(), argv.data(), envp.data(),
                                    out.write_end, err.write_end, progress.write_end,
                                    control.read_end});
  if (!started.ok()) return started.status();
  const pid_t pid = *started;
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
  children_.emplace(id, std::make_unique<Child>(io_, request.tag, pid, pidfd, out_fd, err_fd,
                                                progress_fd, control_fd));
  ReadOutput(id, Stream::kStdout);
  ReadOutput(id, Stream::kStderr);
  ReadProgress(id);
  WaitForExit(id);
  return pid;
}

void PosixSpawner::SetWarmProcess(WarmProcess* warm) {
  warm_ = warm;
  if (warm_ == nullptr || strays_) return;
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
  std::set<pid_t> ours;
  for (const auto& [id, child] : children_) ours.insert(child->pid);
  if (warm_ != nullptr) ours.insert(warm_->pid());
  for (const pid_t pid : ZombieChildren()) {
    if (!ours.count(pid)) waitpid(pid, nullptr, WNOHANG);
  }
}

void PosixSpawner::WaitForExit(uint64_t id) {
  children_.at(id)->exit_watch.async_wait(
      asio::posix::descriptor_base::wait_read,
      [this, id](const boost::system::error_code& ec) { OnExitReadable(id, ec); });
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
    c.retry.async_wait([this, id](const boost::system::error_code& retry_ec) {
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
  descriptor.async_read_some(asio::buffer(buffer), [this, id, stream](boost::system::error_code ec, size_t n) {
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
      asio::buffer(child.progress_buffer), [this, id](boost::system::error_code ec, size_t n) {
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
