// TcpConnection: one TCP connection with a deadline on every operation, the
// transport under StoreClient. Errors are Status values with a short detail
// ("timed out", "connection refused"); the caller adds what it was doing.
//
// The socket is non-blocking and every wait is a poll() bounded by the
// remaining time, so no call blocks past its deadline (name resolution
// excepted: getaddrinfo has no deadline).
//
// Thread-safety: none. Move-only; the destructor closes the socket.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/status.h"
#include "worker_runtime/store/store_wire.h"

namespace muster::runtime {

class TcpConnection {
 public:
  // Connects to host:port with TCP_NODELAY. The host is resolved once (again
  // only after a temporary resolution failure). A refused (or reset)
  // connection is retried after a jittered muster::NextBackoff pause (10 ms
  // doubling to 500 ms) until `deadline`, since the store may start after its
  // clients. Errors: Timeout when the deadline passes, IoError for an
  // unresolvable host or any other connect error.
  static Result<TcpConnection> Connect(const std::string& host, int port, Time deadline);

  TcpConnection(TcpConnection&& other) noexcept;
  TcpConnection& operator=(TcpConnection&& other) noexcept;
  TcpConnection(const TcpConnection&) = delete;
  TcpConnection& operator=(const TcpConnection&) = delete;
  ~TcpConnection();

  // Sends every byte. Errors: Timeout, IoError (peer closed, reset, ...).
  Status SendAll(std::string_view bytes, Time deadline);
  // Reads until `reply` is done; never reads past its end. Errors: Timeout,
  // IoError (closed by the peer, or a reply the decoder rejects).
  Status Receive(store_wire::ReplyDecoder& reply, Time deadline);

 private:
  explicit TcpConnection(int fd) : fd_(fd) {}
  void Close();

  int fd_ = -1;
};

}  // namespace muster::runtime
