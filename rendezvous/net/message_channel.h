// MessageChannel: one TCP connection speaking the rendezvous protocol —
// frames in, decoded Messages out; Messages in, frames out through a bounded
// write queue. Used by the daemon (one per agent) and by the agent's client.
//
// Errors never escape: a broken frame or undecodable message makes the
// channel send Error{kBadFrame, fatal} (with BadInput::kReply) and close;
// the on_close handler runs exactly once.
//
// With a TlsContext the bytes go through TLS (tls_stream.h). A client
// channel runs Handshake() before Start(); a server channel handshakes as it
// first reads, and answers a peer that speaks plain text with a plain
// Error{kBadFrame, fatal} saying TLS is required (with BadInput::kReply). Not thread-safe:
// everything runs on the socket's (single-threaded) executor. Hold it in a shared_ptr; pending
// operations keep it alive.
#pragma once

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "rendezvous/net/channel_end.h"
#include "rendezvous/net/tls_context.h"
#include "rendezvous/protocol/frame_codec.h"
#include "rendezvous/protocol/messages.h"

namespace muster::rdzv {

class TlsStream;

class MessageChannel : public std::enable_shared_from_this<MessageChannel> {
 public:
  struct Limits {
    // The largest frame (N) read, and sent: the protocol's bound holds in
    // both directions, save that a StatusReply may be sent up to
    // kMaxStatusReplyFrameBytes.
    uint32_t max_frame_bytes = kDefaultMaxFrameBytes;
    size_t max_queued_bytes = 8u << 20;  // a peer that does not read is dropped
    // The largest first frame read (0: max_frame_bytes). A daemon reads a
    // Hello first and sets kMaxHelloFrameBytes: a peer not yet known holds
    // at most that much of its memory, not a whole max_frame_bytes.
    uint32_t max_first_frame_bytes = 0;
  };
  struct Handlers {
    std::function<void(Message)> on_message;
    std::function<void(const std::string& why, ChannelEnd end)> on_close;
    // Optional: sees each frame before it is decoded; returning true means it
    // was handled (a hot message decoded without copies) and skips on_message.
    std::function<bool(uint8_t type, std::string_view payload)> on_frame;
  };

  // What a broken frame or an undecodable message gets before the channel
  // closes: the daemon tells its peer why, an agent just closes.
  enum class BadInput { kClose, kReply };

  // `tls`: null for plain TCP. `verify_host`: a client's dialled host, which
  // the server's certificate must name.
  MessageChannel(boost::asio::ip::tcp::socket socket, Limits limits, BadInput bad_input,
                 std::shared_ptr<const TlsContext> tls = nullptr,
                 const std::string& verify_host = "");
  ~MessageChannel();

  // Client side of a TLS channel, before Start(): `done` gets "" once the
  // handshake is done, else why it failed, with `end` kTlsFailed when TLS
  // refused (kPeerGone/kLocal when the connection broke). Plain: "" at once.
  void Handshake(std::function<void(const std::string& failure, ChannelEnd end)> done);
  void Start(Handlers handlers);
  // Queues `message`. Returns false (and closes) if the queue limit is
  // exceeded, or if the frame is larger than the peer may accept (see
  // Limits): sending it would only make the peer drop the connection.
  bool Send(const Message& message);
  // Queues an already encoded frame (Encode(message)); same contract as Send.
  bool SendFrame(std::string_view frame);
  // Closes now; queued frames are dropped.
  void Close(const std::string& why) { Close(why, ChannelEnd::kLocal); }
  // Closes once every queued frame has been written.
  void CloseAfterFlush(const std::string& why);
  bool is_open() const { return open_; }
  Time last_activity() const { return last_activity_; }
  std::string peer() const { return peer_; }
  bool tls() const { return tls_ != nullptr; }

 private:
  void Read();
  void Write();
  void Fail(const std::string& why);
  void Close(const std::string& why, ChannelEnd end);
  void CloseOnError(const boost::system::error_code& ec);
  // Why `ec` ended the connection, and how.
  std::pair<std::string, ChannelEnd> Describe(const boost::system::error_code& ec) const;
  // A server's answer to a plain-text peer on a TLS port, best effort.
  void RefusePlaintext();

  boost::asio::ip::tcp::socket socket_;
  std::unique_ptr<TlsStream> tls_;
  Limits limits_;
  BadInput bad_input_;
  Handlers handlers_;
  FrameDecoder decoder_;
  // Small: every frame but a large status reply fits, and 10,000 daemon-side
  // channels stay compact (fewer pages touched per heartbeat, less RSS).
  std::array<char, 1024> read_buffer_;
  std::string pending_;    // frames queued while a write is in flight
  std::string in_flight_;  // the bytes being written now
  bool writing_ = false;
  bool open_ = true;
  bool close_after_flush_ = false;
  std::string close_reason_;
  std::string peer_;
  Time last_activity_;
};

}  // namespace muster::rdzv
