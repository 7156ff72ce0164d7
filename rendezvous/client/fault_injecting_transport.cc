#include "rendezvous/client/fault_injecting_transport.h"

#include <boost/asio/post.hpp>
#include <utility>

#include "common/clock.h"

namespace muster::rdzv {
namespace asio = boost::asio;

FaultInjectingTransport::FaultInjectingTransport(asio::io_context& io, ClientTransport& inner)
    : io_(io), inner_(inner) {}

FaultInjectingTransport::~FaultInjectingTransport() {
  alive_.reset();
  for (auto& timer : delayed_heartbeats_) timer->cancel();
}

void FaultInjectingTransport::SetEvents(Events events) {
  events_ = std::move(events);
  Events inner = events_;
  // What arrives while the traffic is cut never arrived.
  inner.on_message = [this](LinkId link, const Message& message) {
    if (!Suspended() && events_.on_message) events_.on_message(link, message);
  };
  inner_.SetEvents(std::move(inner));
}

void FaultInjectingTransport::Connect(LinkId link, const Endpoint& endpoint) {
  if (!Suspended()) return inner_.Connect(link, endpoint);
  // Cut off: the attempt would go unanswered, which is silence, not refusal.
  asio::post(io_, [this, alive = std::weak_ptr<int>(alive_), link] {
    if (!alive.expired() && events_.on_connect_failed) {
      events_.on_connect_failed(link, ConnectError::kNotTried, "traffic is cut (fault injection)");
    }
  });
}

void FaultInjectingTransport::Send(LinkId link, const Message& message) {
  if (Suspended()) return;
  const auto now = Clock::now();
  if (!std::holds_alternative<Heartbeat>(message) || now >= delayed_until_) {
    return inner_.Send(link, message);
  }
  std::erase_if(delayed_heartbeats_, [now](const auto& t) { return t->expiry() <= now; });
  auto late = std::make_shared<asio::steady_timer>(io_, heartbeat_delay_);
  delayed_heartbeats_.push_back(late);
  late->async_wait([this, alive = std::weak_ptr<int>(alive_), link,
                    message](const boost::system::error_code& ec) {
    if (!ec && !alive.expired() && !Suspended()) inner_.Send(link, message);
  });
}

void FaultInjectingTransport::SuspendTraffic(std::chrono::milliseconds duration) {
  suspended_until_ = Clock::now() + duration;
}

void FaultInjectingTransport::DelayHeartbeats(std::chrono::milliseconds delay,
                                              std::chrono::milliseconds window) {
  heartbeat_delay_ = delay;
  delayed_until_ = Clock::now() + window;
}

}  // namespace muster::rdzv
