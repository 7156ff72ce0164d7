#include "store/store_session.h"

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
      settle_timer_(socket_.get_executor()) {
  boost::system::error_code ec;
  auto endpoint = socket_.remote_endpoint(ec);
  peer_ = ec ? std::string("?")
             : endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
  // Every reply is tiny and awaited by a blocking client: never let Nagle
  // hold one back.
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
}

void StoreSession::Start() { DoRead(); }

void StoreSession::DoRead() {
  if (closed_ || reading_) return;
  reading_ = true;
  socket_.async_read_some(asio::buffer(read_buffer_),
                          [self = shared_from_this()](const boost::system::error_code& ec,
                                                      size_t n) { self->OnRead(ec, n); });
}

void StoreSession::OnRead(const boost::system::error_code& ec, size_t n) {
  reading_ = false;
  if (closed_) return;
  if (ec) {
    Close(ec == asio::error::eof ? "peer closed" : ec.message(), /*warn=*/false);
    return;
  }
  decoder_.Feed(std::span<const uint8_t>(read_buffer_.data(), n));
  // A client that sends is not quiet: a running check starts over.
  if (settling_) {
    settling_ = false;
    settle_timer_.cancel();
  }
  Pump();
}

void StoreSession::Pump() {
  ProcessRequests();
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
    HandlerOutcome outcome = HandleRequest(host->store(), id_, decoder_.dialect(),
                                           std::move(decoded.request), limits_.handler);
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
  queued_bytes_ += bytes.size();
  queue_.push_back(std::move(bytes));
  if (queued_bytes_ > limits_.max_queued_bytes) {
    Close("write queue over limit queued_bytes=" + std::to_string(queued_bytes_) +
              " max=" + std::to_string(limits_.max_queued_bytes),
          /*warn=*/true);
    return;
  }
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
  if (!notify_host) return;
  if (auto host = host_.lock()) {
    host->store().CancelWaits(id_);
    host->OnSessionClosed(id_);
  }
}

}  // namespace muster::store
