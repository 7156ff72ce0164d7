// FaultInjectingTransport: a ClientTransport decorator that cuts or delays
// the agent's rendezvous traffic on command (common/fault_spec.h), so that
// the chaos suite can cut one agent off while the client's logic
// (client_machine.h) runs unchanged, knowing nothing of it.
//
//   - SuspendTraffic(duration): for `duration` nothing is sent, what arrives
//     is dropped, and a connect fails at once as never tried, as if the
//     network between this agent and the daemon were cut; what the machine
//     decides meanwhile (its fence) runs on;
//   - DelayHeartbeats(delay, window): for `window`, each heartbeat leaves
//     `delay` after it was sent (and is dropped if traffic is cut by then).
//
// A shell: it reads the clock. Not thread-safe: one io_context thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <vector>

#include "common/clock.h"
#include "rendezvous/client/client_transport.h"

namespace muster::rdzv {

class FaultInjectingTransport : public ClientTransport {
 public:
  // `inner` must outlive this transport.
  FaultInjectingTransport(boost::asio::io_context& io, ClientTransport& inner);
  ~FaultInjectingTransport() override;

  void SetEvents(Events events) override;
  void Connect(LinkId link, const Endpoint& endpoint) override;
  void Send(LinkId link, const Message& message) override;
  void Close(LinkId link, const std::string& why) override { inner_.Close(link, why); }

  void SuspendTraffic(std::chrono::milliseconds duration);
  void DelayHeartbeats(std::chrono::milliseconds delay, std::chrono::milliseconds window);

 private:
  bool Suspended() const { return Clock::now() < suspended_until_; }

  boost::asio::io_context& io_;
  ClientTransport& inner_;
  Events events_;
  Time suspended_until_{};
  Time delayed_until_{};
  std::chrono::milliseconds heartbeat_delay_{0};
  std::vector<std::shared_ptr<boost::asio::steady_timer>> delayed_heartbeats_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace muster::rdzv
