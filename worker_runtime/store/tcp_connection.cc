#include "worker_runtime/store/tcp_connection.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <utility>

#include "common/backoff.h"
#include "common/clock.h"

namespace muster::runtime {
namespace {

using std::chrono::milliseconds;

// Connect retries: 10 ms doubling to at most 500 ms (before jitter), so a
// store that starts a moment after its clients is reached quickly without a
// busy loop.
constexpr milliseconds kConnectBackoffBase{10};
constexpr milliseconds kConnectBackoffCap{500};

// A uniform value in [0, 1) for NextBackoff's jitter. Per thread, seeded
// from the system, so processes started together draw different pauses.
double UnitRandom() {
  thread_local std::mt19937_64 engine(std::random_device{}());
  return std::uniform_real_distribution<double>(0.0, 1.0)(engine);
}

// poll() takes whole milliseconds; rounding up keeps a sub-millisecond
// remainder from turning into a busy loop of zero-timeout polls.
int RemainingMs(Time deadline) {
  const auto left = deadline - Clock::now();
  if (left <= std::chrono::steady_clock::duration::zero()) return 0;
  const auto ms = std::chrono::ceil<milliseconds>(left).count();
  return static_cast<int>(std::min<int64_t>(ms, 1 << 30));
}

std::string ErrnoText(int error) { return std::strerror(error); }

// Waits for `events` on fd. Ok when ready; Timeout at the deadline.
Status PollUntil(int fd, short events, Time deadline) {
  for (;;) {
    const int timeout_ms = RemainingMs(deadline);
    if (timeout_ms == 0) return Status::Timeout("timed out");
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, timeout_ms);
    if (n > 0) return Status::Ok();
    if (n < 0 && errno != EINTR) return Status::IoError("poll: " + ErrnoText(errno));
  }
}

bool IsRetryableConnectError(int error) {
  return error == ECONNREFUSED || error == ECONNRESET || error == ECONNABORTED;
}

// One non-blocking connect attempt to one address. Returns the socket, or
// -1 with *error set to the errno that ended the attempt (ETIMEDOUT at the
// deadline).
int ConnectOnce(const addrinfo& address, Time deadline, int* error) {
  const int fd = ::socket(address.ai_family, address.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                          address.ai_protocol);
  if (fd < 0) {
    *error = errno;
    return -1;
  }
  if (::connect(fd, address.ai_addr, address.ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      *error = errno;
      ::close(fd);
      return -1;
    }
    if (!PollUntil(fd, POLLOUT, deadline).ok()) {
      *error = ETIMEDOUT;
      ::close(fd);
      return -1;
    }
    int so_error = 0;
    socklen_t len = sizeof(so_error);
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) so_error = errno;
    if (so_error != 0) {
      *error = so_error;
      ::close(fd);
      return -1;
    }
  }
  // TCPStore requests are small and answered one at a time: Nagle would add
  // a delayed-ACK round trip to every call.
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

}  // namespace

Result<TcpConnection> TcpConnection::Connect(const std::string& host, int port, Time deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  const std::string service = std::to_string(port);
  // Resolved once: a refused connect is retried on the same addresses. Only a
  // temporary resolution failure (EAI_AGAIN) leaves this empty, so that the
  // next attempt resolves again.
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(nullptr, &::freeaddrinfo);
  int last_error = 0;  // of the latest attempt, reported if the deadline passes
  for (int attempt = 0;; ++attempt) {
    if (!addresses) {
      addrinfo* resolved = nullptr;
      const int gai = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &resolved);
      if (gai == 0) {
        addresses.reset(resolved);
      } else if (gai != EAI_AGAIN) {
        return Status::IoError(std::string("cannot resolve host: ") + ::gai_strerror(gai));
      }
    }
    bool retryable = !addresses;  // the resolution failed temporarily
    for (const addrinfo* a = addresses.get(); a != nullptr; a = a->ai_next) {
      const int fd = ConnectOnce(*a, deadline, &last_error);
      if (fd >= 0) return TcpConnection(fd);
      retryable = retryable || IsRetryableConnectError(last_error);
    }

    if (last_error == ETIMEDOUT || RemainingMs(deadline) == 0) {
      // A store that keeps refusing until the deadline is "not up yet": a
      // timeout, with the last refusal saying why no connection was made.
      return Status::Timeout(last_error != 0 && last_error != ETIMEDOUT
                                 ? "timed out; last error: " + ErrnoText(last_error)
                                 : std::string("timed out"));
    }
    if (!retryable) return Status::IoError("connect: " + ErrnoText(last_error));
    // Jittered, so that the ranks of a job that all wait for the same store
    // do not retry it in lockstep.
    const milliseconds pause =
        NextBackoff(attempt, kConnectBackoffBase, kConnectBackoffCap, UnitRandom());
    const milliseconds left(RemainingMs(deadline));
    std::this_thread::sleep_for(std::min(pause, left));
    // Another attempt at the deadline could only time out and hide the reason.
    if (pause >= left) {
      return Status::Timeout(last_error != 0 ? "timed out; last error: " + ErrnoText(last_error)
                                             : std::string("timed out resolving the host"));
    }
  }
}

TcpConnection::TcpConnection(TcpConnection&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

TcpConnection& TcpConnection::operator=(TcpConnection&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

TcpConnection::~TcpConnection() { Close(); }

void TcpConnection::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status TcpConnection::SendAll(std::string_view bytes, Time deadline) {
  while (!bytes.empty()) {
    // MSG_NOSIGNAL: a store that went away is an error value, not SIGPIPE.
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      Status ready = PollUntil(fd_, POLLOUT, deadline);
      if (!ready.ok()) return ready;
      continue;
    }
    return Status::IoError("send: " + ErrnoText(errno));
  }
  return Status::Ok();
}

Status TcpConnection::Receive(store_wire::ReplyDecoder& reply, Time deadline) {
  char chunk[64 * 1024];
  while (!reply.done()) {
    if (reply.failed()) return Status::IoError(reply.error());
    const size_t want = std::min(reply.BytesWanted(), sizeof(chunk));
    const ssize_t n = ::recv(fd_, chunk, want, 0);
    if (n > 0) {
      reply.Feed(std::string_view(chunk, static_cast<size_t>(n)));
      continue;
    }
    if (n == 0) return Status::IoError("the store closed the connection");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      Status ready = PollUntil(fd_, POLLIN, deadline);
      if (!ready.ok()) return ready;
      continue;
    }
    return Status::IoError("recv: " + ErrnoText(errno));
  }
  return Status::Ok();
}

}  // namespace muster::runtime
