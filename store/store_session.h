// One client connection of the store server: reads bytes, decodes requests,
// applies them through HandleRequest and writes replies in order.
//
// Contract:
//   - Replies are queued and written with one outstanding async_write at a
//     time, in request order. While more than pause_reading_bytes are queued
//     (a client that does not read its replies) the session neither decodes
//     nor reads further requests.
//   - Memory (docs/security.md, "What bounds each request"): what a session
//     holds for its client is its decoder's buffer and partial request
//     (RequestDecoder::held_bytes()) and its queued replies; the host adds
//     up every session's. A reply is sized before it is built (HandlerLimits
//     ::reply_room): one that would take the queue past max_queued_bytes, or
//     all sessions together past max_buffered_bytes, is not built, and the
//     connection closes with a warning naming the peer and the bound. A read
//     that takes all sessions together past max_buffered_bytes closes the
//     connection that read it, likewise. Reads go through the host's one
//     shared buffer (SessionHost::ReadBuffer()), so an idle connection holds
//     no buffer of its own.
//   - A malformed, oversized, unsupported or ambiguous request closes this
//     session only, with one warning log line; the host keeps serving
//     everyone else.
//   - A connection without handshake is told apart as torch 1.13 or 2.1 by
//     dialect_rule.h. When that waits for the client to go quiet (a query 8
//     with nothing after its key), the session waits settle_delay with no
//     new byte, and no unread byte in the socket, before deciding.
//   - Close() is idempotent; it cancels the socket's operations, drops the
//     session's pending waits and tells the host, which forgets the session.
//   - Handlers keep the session alive (shared_from_this); the host is held
//     weakly, so a destroyed server leaves sessions inert, never dangling.
//
// Thread-safety: none; every call on the io_context's (single) thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "store/key_value_store.h"
#include "store/request_handler.h"
#include "store/tcpstore_codec.h"

namespace muster::store {

// What a session needs from the server that owns it.
class SessionHost {
 public:
  virtual ~SessionHost() = default;
  virtual KeyValueStore& store() = 0;
  // Sends kStopWaiting to the owners of every waiter the store completed.
  virtual void DeliverReadyWaiters() = 0;
  // The session with `id` has closed; drop it.
  virtual void OnSessionClosed(uint64_t id) = 0;
  // Scratch space for one socket read, shared by every session of the host
  // (all on one thread): valid until the caller returns to the io_context.
  virtual std::span<uint8_t> ReadBuffer() = 0;
  // A session's holding changed from `before` to `after` bytes.
  virtual void AccountHeld(size_t before, size_t after) = 0;
  // What every session holds together.
  virtual size_t HeldBytes() const = 0;
};

// The default of --store-max-connections. torch holds 2 connections to the
// store per rank on 1.13 (its client and its callback client) and 1 on 2.6
// and 2.14 (measured: docs/security.md, "What bounds each request"): this
// fits 100,000 ranks of 1.13 with room to spare. The open-file limit of the
// agent bounds it as well.
inline constexpr size_t kDefaultStoreMaxConnections = 262'144;

struct SessionLimits {
  DecoderLimits decoder;
  size_t pause_reading_bytes = 4u << 20;  // stop reading while this much is queued
  size_t max_queued_bytes = 128u << 20;   // one connection's queued replies
  // Decoder buffers, partial requests and queued replies of every
  // connection together: at least twice decoder.max_request_bytes, so that
  // any one valid request fits alone.
  size_t max_buffered_bytes = 256u << 20;
  // Connections open at once (--store-max-connections); one past it is
  // reset at accept and counted with the refused ones.
  size_t max_connections = kDefaultStoreMaxConnections;
  // How long a client that may be torch 1.13 must stay quiet (see above).
  std::chrono::milliseconds settle_delay{50};
  // Per-connection waits and the whole store's bounds (request_handler.h).
  HandlerLimits handler;
};

class StoreSession : public std::enable_shared_from_this<StoreSession> {
 public:
  StoreSession(uint64_t id, boost::asio::ip::tcp::socket socket, std::weak_ptr<SessionHost> host,
               SessionLimits limits);
  StoreSession(const StoreSession&) = delete;
  StoreSession& operator=(const StoreSession&) = delete;

  // Starts reading. REQUIRES: called once, on a session owned by a shared_ptr.
  void Start();

  // Queues bytes for the client (a reply or a STOP_WAITING notification).
  // No-op once closed.
  void Send(std::string bytes);

  // Closes the connection. `warn` logs the reason at warning level (protocol
  // errors), otherwise at debug level (disconnects, shutdown). Does not call
  // the host back when `notify_host` is false (the host is closing it).
  void Close(std::string_view reason, bool warn, bool notify_host = true);

  const std::string& peer() const { return peer_; }

 private:
  void DoRead();
  void OnReadable(const boost::system::error_code& ec);
  // Tells the host what this session holds now (held_).
  void UpdateHeld();
  // Where this request's reply must fit (HandlerLimits::reply_room).
  void SetReplyRoom(const SessionHost& host, HandlerLimits& limits) const;
  void Pump();             // process buffered requests, then read more if allowed
  void ProcessRequests();  // stops at need-more, close, or a full write queue
  void StartSettleTimer();
  void OnSettleTimer();
  void DoWrite();
  void OnWrite(const boost::system::error_code& ec, size_t n);

  const uint64_t id_;
  boost::asio::ip::tcp::socket socket_;
  std::weak_ptr<SessionHost> host_;
  const SessionLimits limits_;
  std::string peer_;
  RequestDecoder decoder_;
  size_t held_ = 0;               // what the host was last told this session holds
  std::string connection_bound_;  // the per-connection reply bound, for warnings
  std::string store_bound_;       // the all-connections bound, for warnings
  boost::asio::steady_timer settle_timer_;
  bool settling_ = false;  // settle_timer_ runs for the current quiet check
  bool quiet_ = false;     // the client stayed quiet for settle_delay (read by one Next)

  std::deque<std::string> queue_;      // replies not yet handed to async_write
  std::deque<std::string> in_flight_;  // replies of the outstanding async_write
  size_t queued_bytes_ = 0;            // in queue_ and in_flight_
  bool writing_ = false;
  bool reading_ = false;
  bool closed_ = false;
};

}  // namespace muster::store
