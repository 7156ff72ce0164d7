// MessageChannel: one TCP connection speaking the rendezvous protocol —
// frames in, decoded Messages out; Messages in, frames out through a bounded
// write queue. Used by the daemon (one per agent) and by the agent's client.
//
// Errors never escape: a broken frame or undecodable message makes the
// channel send Error{kBadFrame, fatal} (with BadInput::kReply) and close;
// the on_close handler runs exactly once. Not thread-safe: everything runs on
// the socket's (single-threaded) executor. Hold it in a shared_ptr; pending
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
#include "rendezvous/protocol/frame_codec.h"
#include "rendezvous/protocol/messages.h"

namespace muster::rdzv {

class MessageChannel : public std::enable_shared_from_this<MessageChannel> {
 public:
  struct Limits {
    // The largest frame (N) read, and sent: the protocol's bound holds in
    // both directions, save that a StatusReply may be sent up to
    // kMaxStatusReplyFrameBytes.
    uint32_t max_frame_bytes = kDefaultMaxFrameBytes;
    size_t max_queued_bytes = 8u << 20;  // a peer that does not read is dropped
  };
  struct Handlers {
    std::function<void(Message)> on_message;
    // `peer_gone`: the peer's side closed or reset the connection (its host
    // answered), as opposed to a local close, a timeout or a local error.
    std::function<void(const std::string& why, bool peer_gone)> on_close;
    // Optional: sees each frame before it is decoded; returning true means it
    // was handled (a hot message decoded without copies) and skips on_message.
    std::function<bool(uint8_t type, std::string_view payload)> on_frame;
  };

  // What a broken frame or an undecodable message gets before the channel
  // closes: the daemon tells its peer why, an agent just closes.
  enum class BadInput { kClose, kReply };

  MessageChannel(boost::asio::ip::tcp::socket socket, Limits limits, BadInput bad_input);

  void Start(Handlers handlers);
  // Queues `message`. Returns false (and closes) if the queue limit is
  // exceeded, or if the frame is larger than the peer may accept (see
  // Limits): sending it would only make the peer drop the connection.
  bool Send(const Message& message);
  // Queues an already encoded frame (Encode(message)); same contract as Send.
  bool SendFrame(std::string_view frame);
  // Closes now; queued frames are dropped.
  void Close(const std::string& why) { Close(why, false); }
  // Closes once every queued frame has been written.
  void CloseAfterFlush(const std::string& why);
  bool is_open() const { return open_; }
  Time last_activity() const { return last_activity_; }
  std::string peer() const { return peer_; }

 private:
  void Read();
  void Write();
  void Fail(const std::string& why);
  void Close(const std::string& why, bool peer_gone);
  void CloseOnError(const boost::system::error_code& ec);

  boost::asio::ip::tcp::socket socket_;
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
