#include "store/store_session.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>
#include <boost/asio/write.hpp>

#include "store/request_handler.h"

namespace muster::store {

namespace asio = boost::asio;

StoreSession::StoreSession(uint64_t id, asio::ip::tcp::socket socket,
                           std::weak_ptr<SessionHost> host, SessionLimits limits)
    : id_(id),
      socket_(std::move(socket)),
      host_(std::move(host)),
      limits_(limits),
      decoder_(limits.decoder),
      connection_bound_("max_queued_bytes=" + std::to_string(limits.max_queued_bytes) +
                        " (per connection)"),
      store_bound_("max_buffered_bytes=" + std::to_string(limits.max_buffered_bytes) +
                   " (all connections)"),
      settle_timer_(socket_.get_executor()) {
  boost::system::error_code ec;
  auto endpoint = socket_.remote_endpoint(ec);
  peer_ = ec ? std::string("?")
             : endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
  // Every reply is tiny and awaited by a blocking client: never let Nagle
  // hold one back.
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  // Reads wait for readiness and then read without blocking into the host's
  // shared buffer (OnReadable).
  socket_.non_blocking(true, ec);
}

void StoreSession::Start() { DoRead(); }

void StoreSession::DoRead() {
  if (closed_ || reading_) return;
  reading_ = true;
  socket_.async_wait(
      asio::ip::tcp::socket::wait_read,
      [self = shared_from_this()](const boost::system::error_code& ec) { self->OnReadable(ec); });
}

void StoreSession::OnReadable(const boost::system::error_code& wait_ec) {
  reading_ = false;
  if (closed_) return;
  if (wait_ec) {
    Close(wait_ec.message(), /*warn=*/false);
    return;
  }
  auto host = host_.lock();
  if (!host) {
    Close("server gone", /*warn=*/false, /*notify_host=*/false);
    return;
  }
  const std::span<uint8_t> buffer = host->ReadBuffer();
  boost::system::error_code ec;
  const size_t n = socket_.read_some(asio::buffer(buffer.data(), buffer.size()), ec);
  if (ec == asio::error::would_block || ec == asio::error::try_again) {
    DoRead();
    return;
  }
  if (ec) {
    Close(ec == asio::error::eof ? "peer closed" : ec.message(), /*warn=*/false);
    return;
  }
  decoder_.Feed(std::span<const uint8_t>(buffer.data(), n));
  UpdateHeld();
  if (host->HeldBytes() > limits_.max_buffered_bytes) {
    Close("store buffers over their bound held=" + std::to_string(host->HeldBytes()) +
              " this_connection=" + std::to_string(held_) + " " + store_bound_,
          /*warn=*/true);
    return;
  }
  // A client that sends is not quiet: a running check starts over.
  if (settling_) {
    settling_ = false;
    settle_timer_.cancel();
  }
  Pump();
}

void StoreSession::UpdateHeld() {
  const size_t now = closed_ ? 0 : decoder_.held_bytes() + queued_bytes_;
  if (now == held_) return;
  if (auto host = host_.lock()) host->AccountHeld(held_, now);
  held_ = now;
}

void StoreSession::SetReplyRoom(const SessionHost& host, HandlerLimits& limits) const {
  const size_t connection_room =
      limits_.max_queued_bytes > queued_bytes_ ? limits_.max_queued_bytes - queued_bytes_ : 0;
  const size_t held = host.HeldBytes();
  const size_t store_room =
      limits_.max_buffered_bytes > held ? limits_.max_buffered_bytes - held : 0;
  limits.reply_room = std::min(connection_room, store_room);
  limits.reply_bound = connection_room <= store_room ? connection_bound_ : store_bound_;
}

void StoreSession::Pump() {
  ProcessRequests();
  UpdateHeld();
  // Backpressure: while a client leaves its replies unread, its further
  // requests stay unprocessed and its socket unread; OnWrite resumes.
  if (!closed_ && queued_bytes_ <= limits_.pause_reading_bytes) DoRead();
}

void StoreSession::ProcessRequests() {
  while (!closed_ && queued_bytes_ <= limits_.pause_reading_bytes) {
    auto host = host_.lock();
    if (!host) {
      Close("server gone", /*warn=*/false, /*notify_host=*/false);
      return;
    }
    // The facts dialect_rule.h needs; only an undecided connection reads them.
    // A quiet spell found by the settle timer vouches for one decision only.
    StreamFacts facts;
    facts.wait_pending = !decoder_.dialect_settled() && host->store().PendingWaits(id_) > 0;
    facts.quiet = std::exchange(quiet_, false);
    DecodeResult decoded = decoder_.Next(facts);
    if (decoded.state == DecodeResult::kNeedMore) {
      if (decoder_.awaiting_quiet()) StartSettleTimer();
      return;
    }
    if (decoded.state == DecodeResult::kError) {
      Close(decoded.error, /*warn=*/true);
      return;
    }
    const Op op = decoded.request.op;
    HandlerLimits limits = limits_.handler;
    SetReplyRoom(*host, limits);
    HandlerOutcome outcome =
        HandleRequest(host->store(), id_, decoder_.dialect(), std::move(decoded.request), limits);
    if (outcome.close) {
      Close(outcome.close_reason + " query=" + std::string(OpName(op)), /*warn=*/true);
      host->DeliverReadyWaiters();
      return;
    }
    if (!outcome.reply.empty()) Send(std::move(outcome.reply));
    host->DeliverReadyWaiters();
  }
}

void StoreSession::StartSettleTimer() {
  if (settling_) return;
  settling_ = true;
  settle_timer_.expires_after(limits_.settle_delay);
  settle_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (!ec) self->OnSettleTimer();
  });
}

void StoreSession::OnSettleTimer() {
  if (closed_ || !settling_) return;
  settling_ = false;
  // Bytes already in the socket are not silence: the pending read delivers
  // them, and the decision is made on them instead.
  boost::system::error_code ec;
  if (socket_.available(ec) > 0 && !ec) return;
  quiet_ = true;
  Pump();
}

void StoreSession::Send(std::string bytes) {
  if (closed_ || bytes.empty()) return;
  // Replies were sized against the bounds before they were built; a
  // STOP_WAITING byte is too small to matter.
  queued_bytes_ += bytes.size();
  queue_.push_back(std::move(bytes));
  UpdateHeld();
  DoWrite();
}

void StoreSession::DoWrite() {
  if (closed_ || writing_ || queue_.empty()) return;
  writing_ = true;
  // Gather everything queued into one write: a burst of small replies (or
  // STOP_WAITING notifications) costs one syscall.
  in_flight_ = std::move(queue_);
  queue_.clear();
  std::vector<asio::const_buffer> buffers;
  buffers.reserve(in_flight_.size());
  for (const auto& b : in_flight_) buffers.push_back(asio::buffer(b));
  asio::async_write(socket_, buffers,
                    [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
                      self->OnWrite(ec, n);
                    });
}

void StoreSession::OnWrite(const boost::system::error_code& ec, size_t n) {
  writing_ = false;
  queued_bytes_ -= n <= queued_bytes_ ? n : queued_bytes_;
  in_flight_.clear();
  if (closed_) return;
  UpdateHeld();
  if (ec) {
    Close("write failed: " + ec.message(), /*warn=*/false);
    return;
  }
  DoWrite();
  if (!reading_ && queued_bytes_ <= limits_.pause_reading_bytes) Pump();
}

void StoreSession::Close(std::string_view reason, bool warn, bool notify_host) {
  if (closed_) return;
  closed_ = true;
  if (warn) {
    spdlog::warn("store connection closed conn={} peer={} dialect=\"{}\" reason=\"{}\"", id_, peer_,
                 decoder_.dialect_label(), reason);
  } else {
    spdlog::debug("store connection closed conn={} peer={} reason=\"{}\"", id_, peer_, reason);
  }
  boost::system::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  settle_timer_.cancel();
  queue_.clear();
  UpdateHeld();  // closed: holds nothing (a write in flight still frees its bytes later)
  if (!notify_host) return;
  if (auto host = host_.lock()) {
    host->store().CancelWaits(id_);
    host->OnSessionClosed(id_);
  }
}

}  // namespace muster::store
