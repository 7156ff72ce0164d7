#include "launcher/posix_spawner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <array>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/process/v2/process.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace muster {
namespace asio = boost::asio;
namespace bp = boost::process::v2;

namespace {

// Runs in the forked child before exec: makes the worker a process-group
// leader (so a signal reaches its children too), ties its life to the agent
// thread, restores default signal handling and wires its output pipes.
struct WorkerSetup {
  const char* const* env;
  int stdout_fd;
  int stderr_fd;
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
    if (setpgid(0, 0) != 0) return {errno, bp::system_category()};
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
    return {};
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
};

}  // namespace

struct PosixSpawner::Child {
  Child(asio::io_context& io, uint64_t t, bp::process p, int out_fd, int err_fd)
      : tag(t), process(std::move(p)), out(io, out_fd), err(io, err_fd) {}
  uint64_t tag;
  bp::process process;
  asio::posix::stream_descriptor out;
  asio::posix::stream_descriptor err;
  std::array<char, 16384> out_buffer;
  std::array<char, 16384> err_buffer;
  int open_parts = 3;  // stdout, stderr, the process itself
};

PosixSpawner::PosixSpawner(asio::io_context& io, SpawnEvents& events) : io_(io), events_(events) {}

PosixSpawner::~PosixSpawner() {
  // Destroying a bp::process SIGKILLs a live child; that is the intent here:
  // the agent is going away and must leave no worker behind.
  for (auto& [pid, child] : children_) SignalGroup(pid, SIGKILL);
}

Result<pid_t> PosixSpawner::Spawn(const SpawnRequest& request) {
  PipePair out, err;
  if (!out.Open() || !err.Open()) {
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
  WorkerSetup setup{envp.data(), out.write_end, err.write_end, getpid()};
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
  // Also set the group from the parent, so a signal sent right after Spawn()
  // returns reaches the group even if the child has not run yet.
  setpgid(pid, pid);

  auto child = std::make_unique<Child>(io_, request.tag, std::move(process), out.ReleaseRead(),
                                       err.ReleaseRead());
  Child& ref = *child;
  children_.emplace(pid, std::move(child));
  ReadOutput(ref, Stream::kStdout);
  ReadOutput(ref, Stream::kStderr);
  ref.process.async_wait([this, pid](bp::error_code, int) {
    auto it = children_.find(pid);
    if (it == children_.end()) return;
    events_.OnExit(it->second->tag, pid, it->second->process.native_exit_code());
    if (--it->second->open_parts == 0) Forget(pid);
  });
  return pid;
}

void PosixSpawner::ReadOutput(Child& child, Stream stream) {
  auto& descriptor = stream == Stream::kStdout ? child.out : child.err;
  auto& buffer = stream == Stream::kStdout ? child.out_buffer : child.err_buffer;
  const pid_t pid = child.process.id();
  descriptor.async_read_some(asio::buffer(buffer),
                             [this, pid, stream](bp::error_code ec, size_t n) {
                               auto it = children_.find(pid);
                               if (it == children_.end()) return;
                               Child& c = *it->second;
                               auto& buf = stream == Stream::kStdout ? c.out_buffer : c.err_buffer;
                               if (n > 0)
                                 events_.OnOutput(c.tag, stream, std::string_view(buf.data(), n));
                               if (!ec) {
                                 ReadOutput(c, stream);
                                 return;
                               }
                               events_.OnOutputClosed(c.tag, stream);
                               if (--c.open_parts == 0) Forget(pid);
                             });
}

void PosixSpawner::Forget(pid_t pid) {
  // Defer destruction: we may be inside one of this child's own handlers.
  asio::post(io_, [this, pid] { children_.erase(pid); });
}

void PosixSpawner::SignalGroup(pid_t pid, int sig) {
  if (pid <= 0) return;
  // ESRCH (group already gone) is the normal outcome of racing an exit.
  if (kill(-pid, sig) != 0 && errno == ESRCH) kill(pid, sig);
}

}  // namespace muster
