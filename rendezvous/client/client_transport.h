// ClientTransport: the connections a RendezvousClient opens for its
// ClientMachine (client_machine.h), each named by the machine's LinkId, as
// one small interface that a decorator can wrap:
//   - TcpClientTransport opens TCP connections and speaks the protocol on
//     them (MessageChannel), over TLS when given a TlsContext: the handshake
//     is part of the connect, and a certificate the agent does not trust, or
//     one that does not name the endpoint's host, fails the connect with
//     ConnectError::kTlsFailed;
//   - FaultInjectingTransport (fault_injecting_transport.h) wraps another to
//     cut or delay traffic for the chaos suite.
//
// Contract: Connect(link) is answered once, through Events, by on_connected
// or on_connect_failed, unless Close(link) comes first; an open link then
// reports each message and, unless Close(link) comes first, its close. After
// Close(link) no event names that link. Events never run inside a call to
// the transport (they come from the io_context). Not thread-safe: one
// io_context thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rendezvous/client/client_machine.h"
#include "rendezvous/net/message_channel.h"

namespace muster::rdzv {

class ClientTransport {
 public:
  struct Events {
    std::function<void(LinkId, const std::string& local_addr)> on_connected;
    std::function<void(LinkId, ConnectError, const std::string& cause)> on_connect_failed;
    std::function<void(LinkId, const Message&)> on_message;
    std::function<void(LinkId, const std::string& why, ChannelEnd end)> on_closed;
  };

  ClientTransport() = default;
  virtual ~ClientTransport() = default;
  ClientTransport(const ClientTransport&) = delete;
  ClientTransport& operator=(const ClientTransport&) = delete;

  // REQUIRES: called once, before any other call.
  virtual void SetEvents(Events events) = 0;
  virtual void Connect(LinkId link, const Endpoint& endpoint) = 0;
  // Dropped when `link` is not open.
  virtual void Send(LinkId link, const Message& message) = 0;
  virtual void Close(LinkId link, const std::string& why) = 0;
};

class TcpClientTransport : public ClientTransport {
 public:
  // `tls`: null for plain TCP.
  explicit TcpClientTransport(boost::asio::io_context& io,
                              std::shared_ptr<const TlsContext> tls = nullptr);
  ~TcpClientTransport() override;

  void SetEvents(Events events) override { events_ = std::move(events); }
  void Connect(LinkId link, const Endpoint& endpoint) override;
  void Send(LinkId link, const Message& message) override;
  void Close(LinkId link, const std::string& why) override;

 private:
  struct Entry {
    std::shared_ptr<boost::asio::ip::tcp::socket> connecting;  // until connected
    std::shared_ptr<MessageChannel> channel;                   // once connected
    std::string host;  // as dialled: the name a TLS server's certificate must hold
  };
  void ConnectAny(LinkId link, const std::vector<boost::asio::ip::tcp::endpoint>& targets);
  void Connected(LinkId link);
  // The channel of `link` is ready (after its TLS handshake, if any).
  void Ready(LinkId link, const std::string& local_addr);
  void Failed(LinkId link, ConnectError error, const std::string& cause);

  boost::asio::io_context& io_;
  std::shared_ptr<const TlsContext> tls_;
  Events events_;
  std::map<LinkId, Entry> links_;
  // Handlers that outlive the transport find it gone.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace muster::rdzv
