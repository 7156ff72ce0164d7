#include "worker_runtime/control/control_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/clock.h"
#include "worker_runtime/progress/inherited_pipe.h"

namespace muster::runtime {
namespace {

int MillisecondsLeft(Time deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

Status Errno(const char* what) {
  return Status::IoError(std::string("control channel: ") + what + ": " + std::strerror(errno));
}

}  // namespace

ControlChannel ControlChannel::FromEnv(const EnvLookup& env) {
  const int from_agent = InheritedPipe(env, "MUSTER_CONTROL_FD");
  const int to_agent = InheritedPipe(env, "MUSTER_PROGRESS_FD");
  if (from_agent < 0 || to_agent < 0) return {};
  return ControlChannel(from_agent, to_agent);
}

ControlChannel ControlChannel::FromProcessEnv() { return FromEnv(SystemEnv()); }

Status ControlChannel::Say(const control::WorkerMessage& message) {
  if (!enabled()) return Status::FailedPrecondition("no control channel");
  std::string line = control::FormatWorkerMessage(message);
  line += '\n';
  // Lines are far below PIPE_BUF, so a write is whole or nothing; EAGAIN
  // means the agent is behind: wait for room, boundedly.
  const auto deadline = Clock::now() + kWriteTimeout;
  while (true) {
    if (write(to_agent_, line.data(), line.size()) >= 0) return Status::Ok();
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return Errno("write");
    pollfd room{.fd = to_agent_, .events = POLLOUT, .revents = 0};
    const int left = MillisecondsLeft(deadline);
    if (left == 0) return Status::IoError("control channel: the agent reads nothing");
    if (poll(&room, 1, left) < 0 && errno != EINTR) return Errno("poll");
  }
}

Status ControlChannel::TakeLine(std::optional<control::AgentMessage>& out) {
  const size_t end = pending_.find('\n');
  if (end == std::string::npos) {
    if (pending_.size() >= control::kMaxLineBytes) {
      pending_.clear();
      return Status::InvalidArgument("control channel: a line longer than " +
                                     std::to_string(control::kMaxLineBytes) + " bytes");
    }
    return Status::Ok();
  }
  const std::string line = pending_.substr(0, end);
  pending_.erase(0, end + 1);
  control::AgentMessage message;
  if (Status s = control::ParseAgentMessage(line, message); !s.ok()) return s;
  out = std::move(message);
  return Status::Ok();
}

Status ControlChannel::Receive(std::chrono::milliseconds wait,
                               std::optional<control::AgentMessage>& out) {
  out.reset();
  if (!enabled()) return Status::FailedPrecondition("no control channel");
  const auto deadline = Clock::now() + wait;
  while (true) {
    if (Status s = TakeLine(out); !s.ok() || out) return s;
    char buffer[1024];
    const ssize_t n = read(from_agent_, buffer, sizeof(buffer));
    if (n > 0) {
      pending_.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return Status::IoError("control channel: the agent closed it");
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return Errno("read");
    const int left = MillisecondsLeft(deadline);
    if (left == 0) return Status::Ok();
    pollfd readable{.fd = from_agent_, .events = POLLIN, .revents = 0};
    if (poll(&readable, 1, left) < 0 && errno != EINTR) return Errno("poll");
  }
}

ControlWatch::ControlWatch(const ControlChannel& channel, std::function<void()> on_message) {
  const int watched = channel.from_agent_fd();
  if (watched < 0) return;
  stop_fd_ = eventfd(0, EFD_CLOEXEC);
  if (stop_fd_ < 0) return;  // no watch: a pause then waits for the step's end
  thread_ = std::thread([this, watched, on_message = std::move(on_message)] {
    pollfd fds[2] = {{.fd = watched, .events = POLLIN, .revents = 0},
                     {.fd = stop_fd_, .events = POLLIN, .revents = 0}};
    while (poll(fds, 2, -1) < 0 && errno == EINTR) {
    }
    if (fds[1].revents == 0 && fds[0].revents != 0) {
      fired_.store(true, std::memory_order_release);
      on_message();
    }
  });
}

ControlWatch::~ControlWatch() {
  if (stop_fd_ < 0) return;
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = write(stop_fd_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
  close(stop_fd_);
}

}  // namespace muster::runtime
