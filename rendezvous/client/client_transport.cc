#include "rendezvous/client/client_transport.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <utility>
#include <vector>

namespace muster::rdzv {
namespace asio = boost::asio;
using asio::ip::tcp;

TcpClientTransport::TcpClientTransport(asio::io_context& io, std::shared_ptr<const TlsContext> tls)
    : io_(io), tls_(std::move(tls)) {}

TcpClientTransport::~TcpClientTransport() {
  alive_.reset();
  // Closed without a word to the machine: it is going away too.
  std::map<LinkId, Entry> links = std::exchange(links_, {});
  for (auto& [link, entry] : links) {
    if (entry.channel) entry.channel->Close("client stopping");
    if (entry.connecting) {
      boost::system::error_code ignored;
      entry.connecting->close(ignored);
    }
  }
}

void TcpClientTransport::Connect(LinkId link, const Endpoint& endpoint) {
  links_[link].connecting = std::make_shared<tcp::socket>(io_);
  links_[link].host = endpoint.host;
  // A numeric address needs no resolver: Asio resolves on a thread of its
  // own, started for the first lookup and joined when the agent forks or
  // exits, a wait for the scheduler each time (--standalone connects to
  // 127.0.0.1 before any worker starts).
  boost::system::error_code not_numeric;
  const asio::ip::address address = asio::ip::make_address(endpoint.host, not_numeric);
  if (!not_numeric) {
    // Reported from the io_context, never from inside this call.
    asio::post(io_, [this, alive = std::weak_ptr<int>(alive_), link,
                     target = tcp::endpoint(address, endpoint.port)] {
      if (alive.expired() || !links_.contains(link)) return;
      ConnectAny(link, {target});
    });
    return;
  }
  auto resolver = std::make_shared<tcp::resolver>(io_);
  resolver->async_resolve(
      endpoint.host, std::to_string(endpoint.port),
      [this, alive = std::weak_ptr<int>(alive_), resolver, link](
          const boost::system::error_code& ec, tcp::resolver::results_type results) {
        if (alive.expired() || !links_.contains(link)) return;
        if (ec)
          return Failed(link, ConnectError::kNotTried, "does not resolve (" + ec.message() + ")");
        ConnectAny(link, std::vector<tcp::endpoint>(results.begin(), results.end()));
      });
}

void TcpClientTransport::ConnectAny(LinkId link, const std::vector<tcp::endpoint>& targets) {
  auto socket = links_[link].connecting;
  // Connects to the first of `targets` that answers.
  asio::async_connect(*socket, targets,
                      [this, alive = std::weak_ptr<int>(alive_), link, socket](
                          const boost::system::error_code& ec, const tcp::endpoint&) {
                        if (alive.expired()) return;
                        const auto it = links_.find(link);
                        // Closed since (the machine gave up on it): no word.
                        if (it == links_.end() || it->second.connecting != socket) return;
                        if (ec == asio::error::connection_refused) {
                          return Failed(link, ConnectError::kRefused, "refused the connection");
                        }
                        if (ec) return Failed(link, ConnectError::kSilent, ec.message());
                        Connected(link);
                      });
}

void TcpClientTransport::Failed(LinkId link, ConnectError error, const std::string& cause) {
  links_.erase(link);
  if (events_.on_connect_failed) events_.on_connect_failed(link, error, cause);
}

void TcpClientTransport::Connected(LinkId link) {
  Entry& entry = links_[link];
  tcp::socket socket = std::move(*std::exchange(entry.connecting, nullptr));
  boost::system::error_code ec;
  const std::string local_addr = socket.local_endpoint(ec).address().to_string();
  entry.channel =
      std::make_shared<MessageChannel>(std::move(socket), MessageChannel::Limits{},
                                       MessageChannel::BadInput::kClose, tls_, entry.host);
  if (!tls_) return Ready(link, local_addr);
  const MessageChannel* raw = entry.channel.get();
  entry.channel->Handshake([this, alive = std::weak_ptr<int>(alive_), link, raw, local_addr](
                               const std::string& failure, ChannelEnd end) {
    if (alive.expired()) return;
    const auto it = links_.find(link);
    // Closed or replaced since: no word.
    if (it == links_.end() || it->second.channel.get() != raw) return;
    if (failure.empty()) return Ready(link, local_addr);
    it->second.channel->Close("TLS handshake failed");
    Failed(link, end == ChannelEnd::kTlsFailed ? ConnectError::kTlsFailed : ConnectError::kSilent,
           failure);
  });
}

void TcpClientTransport::Ready(LinkId link, const std::string& local_addr) {
  Entry& entry = links_[link];
  // A link closed or replaced since is no longer reported.
  const MessageChannel* raw = entry.channel.get();
  auto current = [this, link, raw] {
    const auto it = links_.find(link);
    return it != links_.end() && it->second.channel.get() == raw;
  };
  entry.channel->Start({[this, alive = std::weak_ptr<int>(alive_), link, current](Message m) {
                          if (!alive.expired() && current() && events_.on_message)
                            events_.on_message(link, m);
                        },
                        [this, alive = std::weak_ptr<int>(alive_), link, current](
                            const std::string& why, ChannelEnd end) {
                          if (alive.expired() || !current()) return;
                          links_.erase(link);
                          if (events_.on_closed) events_.on_closed(link, why, end);
                        },
                        {}});
  if (events_.on_connected) events_.on_connected(link, local_addr);
}

void TcpClientTransport::Send(LinkId link, const Message& message) {
  const auto it = links_.find(link);
  if (it == links_.end() || !it->second.channel || !it->second.channel->is_open()) return;
  // Hold it: a Send past the queue's limit closes the channel, whose handler
  // erases the entry.
  std::shared_ptr<MessageChannel> channel = it->second.channel;
  channel->Send(message);
}

void TcpClientTransport::Close(LinkId link, const std::string& why) {
  const auto it = links_.find(link);
  if (it == links_.end()) return;
  Entry entry = std::move(it->second);
  links_.erase(it);  // first: the close handler then finds no link to report
  if (entry.channel) entry.channel->Close(why);
  if (entry.connecting) {
    boost::system::error_code ignored;
    entry.connecting->close(ignored);
  }
}

}  // namespace muster::rdzv
