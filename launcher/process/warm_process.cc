#include "launcher/process/warm_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "launcher/process/close_on_exec.h"
#include "launcher/process/warm_fit.h"

extern const char kWarmZygoteSource[];  // launcher/process/warm/zygote.py, embedded at build time

namespace muster {
namespace asio = boost::asio;
using nlohmann::json;

namespace {

constexpr int kChannelFd = 3;  // where zygote.py finds its channel
// Reads the program (zygote.py) from the channel and runs it, the channel
// open as `channel`.
constexpr char kBootstrap[] =
    "import socket as s;channel=s.socket(s.AF_UNIX,s.SOCK_SEQPACKET,0,3);"
    "exec(compile(channel.recv(1<<20).decode(),'<muster warm process>','exec'))";
// A fork request answers in milliseconds; past this the warm process is stuck.
constexpr int kForkReplyTimeoutMs = 10000;

std::string Joined(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ",") + item;
  return text;
}

// JSON text of `value`; false when a string in it is not valid UTF-8 (an
// environment or argument may hold any bytes; JSON cannot carry them).
bool Dump(const json& value, std::string& text) {
  try {
    text = value.dump();
    return true;
  } catch (const json::exception&) {
    return false;
  }
}

// One packet, without blocking; nullopt when none is there (or the peer
// closed: then `closed` is set).
std::optional<json> ReceiveMessage(int fd, bool& closed) {
  std::string buffer(1 << 16, '\0');
  const ssize_t n = recv(fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
  closed = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  if (n <= 0) return std::nullopt;
  json message = json::parse(buffer.begin(), buffer.begin() + n, nullptr, false);
  if (message.is_discarded() || !message.is_object()) return json::object();
  return message;
}

}  // namespace

WarmProcess::WarmProcess(asio::io_context& io) : io_(io), ready_timer_(io) {}

WarmProcess::~WarmProcess() {
  Kill();
  if (channel_ >= 0) close(channel_);
}

void WarmProcess::Start(WarmSettings settings) {
  settings_ = std::move(settings);
  state_ = State::kStarting;
  started_at_ = Clock::now();
  // Workers are forked twice in the warm process; the middle process exits
  // at once and the worker is handed to the nearest subreaper: this agent.
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    Settle(State::kUnusable,
           std::string("cannot become a child subreaper: ") + std::strerror(errno));
    return;
  }
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    Settle(State::kUnusable, std::string("socketpair: ") + std::strerror(errno));
    return;
  }
  channel_ = pair[0];
  const int child_end = pair[1];

  std::string command;
  if (!Dump(json(settings_.command), command)) {
    Settle(State::kUnusable, "the worker's command line is not valid UTF-8");
    return;
  }
  std::vector<std::string> env = settings_.env;
  env.push_back("MUSTER_WARM_COMMAND=" + command);
  env.push_back("MUSTER_WARM_IMPORTS=" + Joined(settings_.imports));
  std::vector<const char*> envp;
  for (const auto& entry : env) envp.push_back(entry.c_str());
  envp.push_back(nullptr);
  const std::string python = settings_.python;
  // A short command line: the program comes as the channel's first packet,
  // and the workers' command follows, so `ps` shows a forked worker (whose
  // command line is the warm process's) with its script and arguments.
  std::vector<const char*> argv = {python.c_str(), "-u", "-c", kBootstrap};
  for (const auto& arg : settings_.command) argv.push_back(arg.c_str());
  argv.push_back(nullptr);
  const int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  const pid_t agent = getpid();

  const pid_t pid = fork();
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec.
    setsid();
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != agent) _exit(128 + SIGKILL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    // Its own output has no reader: what goes wrong comes over the channel.
    if (devnull >= 0) {
      dup2(devnull, STDOUT_FILENO);
      dup2(devnull, STDERR_FILENO);
    }
    if (child_end == kChannelFd) {
      fcntl(kChannelFd, F_SETFD, 0);
    } else if (dup2(child_end, kChannelFd) < 0) {
      _exit(127);
    }
    // The agent's sockets are not close-on-exec: none may reach the warm
    // process, and through it every worker it forks (any kernel).
    MarkCloseOnExecFrom(kChannelFd + 1);
    execve(python.c_str(), const_cast<char* const*>(argv.data()),
           const_cast<char* const*>(envp.data()));
    _exit(127);
  }
  const int fork_error = errno;
  close(child_end);
  if (devnull >= 0) close(devnull);
  if (pid < 0) {
    Settle(State::kUnusable, std::string("fork: ") + std::strerror(fork_error));
    return;
  }
  pid_ = pid;
  if (send(channel_, kWarmZygoteSource, std::strlen(kWarmZygoteSource), MSG_NOSIGNAL) < 0) {
    Kill();
    Settle(State::kUnusable,
           std::string("cannot send the warm process its program: ") + std::strerror(errno));
    return;
  }
  WatchExit();
  WatchChannel();
  ready_timer_.expires_after(settings_.ready_timeout);
  ready_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || state_ != State::kStarting) return;
    Kill();
    Settle(State::kUnusable,
           "not ready after " + std::to_string(settings_.ready_timeout.count() / 1000) + " s");
  });
}

void WarmProcess::WatchExit() {
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
  if (pidfd < 0) return;  // then a dead warm process shows as a failed fork request
  exit_watch_.emplace(io_, pidfd);
  exit_watch_->async_wait(asio::posix::descriptor_base::wait_read,
                          [this](const boost::system::error_code& ec) {
                            if (ec || pid_ == 0) return;
                            int status = 0;
                            // ECHILD: reaped as a stray already; gone all the same.
                            if (waitpid(pid_, &status, WNOHANG) == 0) {
                              WatchExit();  // not yet: look again
                              return;
                            }
                            pid_ = 0;
                            if (state_ == State::kStarting || state_ == State::kReady) {
                              Settle(State::kUnusable, "the warm process exited");
                            }
                          });
}

void WarmProcess::WatchChannel() {
  channel_watch_.emplace(io_, dup(channel_));
  channel_watch_->async_wait(asio::posix::descriptor_base::wait_read,
                             [this](const boost::system::error_code& ec) {
                               if (!ec && state_ == State::kStarting) OnChannelReadable();
                             });
}

void WarmProcess::OnChannelReadable() {
  bool closed = false;
  auto message = ReceiveMessage(channel_, closed);
  if (!message) {
    if (closed) {
      Settle(State::kUnusable, "the warm process exited before it was ready");
    } else {
      WatchChannel();
    }
    return;
  }
  if (!message->value("ready", false)) {
    Settle(State::kUnusable, message->value("reason", std::string("not ready")));
    Kill();
    return;
  }
  std::vector<std::string> imports;
  if (message->contains("imports") && (*message)["imports"].is_array()) {
    for (const auto& name : (*message)["imports"]) {
      if (name.is_string()) imports.push_back(name.get<std::string>());
    }
  }
  const std::chrono::duration<double> since_start = Clock::now() - started_at_;
  spdlog::info(
      "event=warm_ready pid={} imports=[{}] rss_mib={:.0f} seconds={:.3f} import_seconds={}", pid_,
      Joined(imports), message->value("rss_kib", 0) / 1024.0, since_start.count(),
      message->value("seconds", 0.0));
  Settle(State::kReady, "");
}

void WarmProcess::Settle(State state, const std::string& why) {
  state_ = state;
  ready_timer_.cancel();
  if (channel_watch_) {
    boost::system::error_code ignored;
    channel_watch_->close(ignored);
  }
  if (state == State::kUnusable) {
    unusable_reason_ = why;
    Fallback(why);
  }
  for (auto& then : on_settled_) asio::post(io_, std::move(then));
  on_settled_.clear();
}

void WarmProcess::GiveUp(const std::string& why) {
  Kill();
  Settle(State::kUnusable, why);
}

void WarmProcess::WhenSettled(std::function<void()> then) {
  if (state_ == State::kStarting) {
    on_settled_.push_back(std::move(then));
  } else {
    asio::post(io_, std::move(then));
  }
}

void WarmProcess::Fallback(const std::string& reason) {
  if (!fallbacks_logged_.insert(reason).second) return;
  spdlog::warn(
      "event=warm_fallback reason=\"{}\"; workers start cold, without step hooks (an unmodified "
      "script reports no steps)",
      reason);
}

void WarmProcess::Kill() {
  if (pid_ <= 0) return;
  kill(-pid_, SIGKILL);
}

std::optional<pid_t> WarmProcess::Fork(const SpawnRequest& request, const WarmChildFds& fds) {
  if (state_ == State::kOff) return std::nullopt;
  if (state_ == State::kStarting) {
    Fallback("a worker started before the warm process was ready");
    return std::nullopt;
  }
  if (state_ == State::kUnusable) {
    Fallback(unusable_reason_);
    return std::nullopt;
  }
  if (request.executable != settings_.python || request.argv.empty()) {
    Fallback("the worker's interpreter '" + request.executable + "' is not the warm process's '" +
             settings_.python + "'");
    return std::nullopt;
  }
  if (auto mismatch = WarmEnvironmentMismatch(settings_.env, request.env)) {
    Fallback(*mismatch);
    return std::nullopt;
  }
  const auto fork_started = Clock::now();
  std::error_code cwd_error;
  json message = {{"argv0", request.argv.front()},
                  {"argv", std::vector<std::string>(request.argv.begin() + 1, request.argv.end())},
                  {"env", request.env},
                  {"cwd", std::filesystem::current_path(cwd_error).string()},
                  {"agent_pid", getpid()}};
  std::string text;
  if (!Dump(message, text)) {
    Fallback("the worker's environment or command line is not valid UTF-8");
    return std::nullopt;
  }

  iovec data{const_cast<char*>(text.data()), text.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
  msghdr header{};
  header.msg_iov = &data;
  header.msg_iovlen = 1;
  header.msg_control = control;
  header.msg_controllen = sizeof(control);
  cmsghdr* rights = CMSG_FIRSTHDR(&header);
  rights->cmsg_level = SOL_SOCKET;
  rights->cmsg_type = SCM_RIGHTS;
  rights->cmsg_len = CMSG_LEN(sizeof(int) * 4);
  std::memcpy(CMSG_DATA(rights), fds.data(), sizeof(int) * 4);
  if (sendmsg(channel_, &header, MSG_NOSIGNAL) != static_cast<ssize_t>(text.size())) {
    // Gone (its exit not seen yet) or its channel broken: no later worker tries.
    GiveUp(std::string("cannot send a fork request: ") + std::strerror(errno));
    return std::nullopt;
  }
  pollfd ready{channel_, POLLIN, 0};
  int polled = 0;
  do {
    polled = poll(&ready, 1, kForkReplyTimeoutMs);
  } while (polled < 0 && errno == EINTR);
  bool closed = false;
  auto reply = polled > 0 ? ReceiveMessage(channel_, closed) : std::nullopt;
  if (!reply) {
    // Stuck or gone: no later worker waits on it.
    GiveUp(polled == 0 ? "a fork request had no answer in 10 s" : "the warm process exited");
    return std::nullopt;
  }
  if (!reply->contains("pid") || !(*reply)["pid"].is_number_integer()) {
    Fallback("the warm process could not fork: " +
             reply->value("error", std::string("no pid in its answer")));
    return std::nullopt;
  }
  const pid_t pid = (*reply)["pid"].get<pid_t>();
  if (pid <= 0) {
    Fallback("the warm process answered pid " + std::to_string(pid));
    return std::nullopt;
  }
  const std::chrono::duration<double, std::milli> took = Clock::now() - fork_started;
  spdlog::debug("event=warm_fork pid={} ms={:.1f}", pid, took.count());
  return pid;
}

}  // namespace muster
