#include "rendezvous/net/message_channel.h"

#include <algorithm>
#include <boost/asio/write.hpp>

#include "rendezvous/net/tls_stream.h"
#include "rendezvous/protocol/message_codec.h"

namespace muster::rdzv {
namespace asio = boost::asio;

MessageChannel::MessageChannel(asio::ip::tcp::socket socket, Limits limits, BadInput bad_input,
                               std::shared_ptr<const TlsContext> tls,
                               const std::string& verify_host)
    : socket_(std::move(socket)),
      tls_(tls ? std::make_unique<TlsStream>(socket_, *tls, verify_host) : nullptr),
      limits_(limits),
      bad_input_(bad_input),
      decoder_(limits.max_frame_bytes, limits.max_first_frame_bytes),
      last_activity_(Clock::now()) {
  boost::system::error_code ec;
  auto endpoint = socket_.remote_endpoint(ec);
  peer_ = ec ? "?" : endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
}

MessageChannel::~MessageChannel() = default;

void MessageChannel::Handshake(std::function<void(const std::string&, ChannelEnd)> done) {
  if (!tls_) {
    done("", ChannelEnd::kLocal);
    return;
  }
  tls_->Handshake([self = shared_from_this(), done = std::move(done)](
                      const boost::system::error_code& ec, size_t) {
    if (!ec) return done("", ChannelEnd::kLocal);
    auto [why, end] = self->Describe(ec);
    done(why, end);
  });
}

void MessageChannel::Start(Handlers handlers) {
  handlers_ = std::move(handlers);
  Read();
}

void MessageChannel::Read() {
  auto on_read = [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
    if (!self->open_) return;
    if (ec) {
      self->CloseOnError(ec);
      return;
    }
    self->last_activity_ = Clock::now();
    self->decoder_.Feed(std::string_view(self->read_buffer_.data(), n));
    for (;;) {
      FrameResult frame = self->decoder_.Next();
      if (frame.state == FrameResult::kNeedMore) break;
      if (frame.state == FrameResult::kError) {
        self->Fail(frame.message);
        return;
      }
      if (self->handlers_.on_frame && self->handlers_.on_frame(frame.type, frame.payload)) {
        if (!self->open_ || self->close_after_flush_) return;
        continue;
      }
      auto message = Decode(frame.type, frame.payload);
      if (!message.ok()) {
        self->Fail(message.status().message());
        return;
      }
      if (self->handlers_.on_message) self->handlers_.on_message(std::move(message).value());
      if (!self->open_ || self->close_after_flush_) return;
    }
    self->Read();
  };
  if (tls_) {
    tls_->ReadSome(asio::buffer(read_buffer_), std::move(on_read));
  } else {
    socket_.async_read_some(asio::buffer(read_buffer_), std::move(on_read));
  }
}

void MessageChannel::Fail(const std::string& why) {
  if (bad_input_ == BadInput::kReply) {
    Send(Error{ErrorCode::kBadFrame, why, true});
    CloseAfterFlush("bad input: " + why);
  } else {
    Close("bad input: " + why, ChannelEnd::kLocal);
  }
}

bool MessageChannel::Send(const Message& message) {
  if (!open_ || close_after_flush_) return false;
  return SendFrame(Encode(message));
}

bool MessageChannel::SendFrame(std::string_view frame) {
  if (!open_ || close_after_flush_) return false;
  const size_t n = frame.size() - kFrameLengthBytes;  // type byte and payload
  const bool status_reply =
      frame.size() > kFrameLengthBytes && static_cast<uint8_t>(frame[kFrameLengthBytes]) ==
                                              static_cast<uint8_t>(MessageType::kStatusReply);
  const size_t bound = status_reply ? std::max(limits_.max_frame_bytes, kMaxStatusReplyFrameBytes)
                                    : limits_.max_frame_bytes;
  if (n > bound) {
    Close("outgoing frame of " + std::to_string(n) + " bytes exceeds the " + std::to_string(bound) +
          "-byte bound");
    return false;
  }
  if (pending_.size() + in_flight_.size() + frame.size() > limits_.max_queued_bytes) {
    Close("write queue full (peer not reading)");
    return false;
  }
  // Frames queue up in one buffer whose capacity is reused: no allocation
  // per message, and whatever piled up during a write goes out in one call.
  pending_.append(frame);
  if (!writing_) Write();
  return true;
}

void MessageChannel::Write() {
  if (pending_.empty()) {
    writing_ = false;
    if (close_after_flush_) Close(close_reason_);
    return;
  }
  writing_ = true;
  in_flight_.swap(pending_);
  pending_.clear();
  auto on_written = [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
    if (!self->open_) return;
    if (ec) {
      self->CloseOnError(ec);
      return;
    }
    self->in_flight_.clear();
    // A large reply (a status document) must not pin its
    // buffer for the connection's life.
    if (self->in_flight_.capacity() > (1u << 20)) self->in_flight_.shrink_to_fit();
    self->Write();
  };
  if (tls_) {
    tls_->WriteAll(asio::buffer(in_flight_), std::move(on_written));
  } else {
    asio::async_write(socket_, asio::buffer(in_flight_), std::move(on_written));
  }
}

void MessageChannel::CloseAfterFlush(const std::string& why) {
  if (!open_) return;
  close_after_flush_ = true;
  close_reason_ = why;
  if (!writing_) Close(why);
}

std::pair<std::string, ChannelEnd> MessageChannel::Describe(
    const boost::system::error_code& ec) const {
  if (ec.category() == TlsCategory()) {
    if (ec.value() == static_cast<int>(TlsErrc::kPlaintextPeer)) {
      return {"the peer spoke plain text", ChannelEnd::kTlsFailed};
    }
    return {tls_->failure(), ChannelEnd::kTlsFailed};
  }
  const bool peer_gone = ec == asio::error::eof || ec == asio::error::connection_reset ||
                         ec == asio::error::broken_pipe;
  return {ec == asio::error::eof ? "peer closed" : ec.message(),
          peer_gone ? ChannelEnd::kPeerGone : ChannelEnd::kLocal};
}

void MessageChannel::CloseOnError(const boost::system::error_code& ec) {
  if (ec == MakeErrorCode(TlsErrc::kPlaintextPeer) && bad_input_ == BadInput::kReply) {
    RefusePlaintext();
  }
  auto [why, end] = Describe(ec);
  Close(why, end);
}

void MessageChannel::RefusePlaintext() {
  // One small frame into an empty socket buffer: written whole or not at
  // all, without waiting. The agent reads a fatal refusal that says why.
  const std::string frame = Encode(
      Error{ErrorCode::kBadFrame,
            "this rendezvous requires TLS: give the agent --rdzv-conf tls_ca=FILE (see muster(1))",
            true});
  boost::system::error_code ignored;
  socket_.native_non_blocking(true, ignored);
  socket_.write_some(asio::buffer(frame), ignored);
}

void MessageChannel::Close(const std::string& why, ChannelEnd end) {
  if (!open_) return;
  open_ = false;
  boost::system::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  pending_.clear();
  in_flight_.clear();
  auto on_close = std::move(handlers_.on_close);
  handlers_ = {};
  if (on_close) on_close(why, end);
}

}  // namespace muster::rdzv
