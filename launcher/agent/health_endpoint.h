// HealthEndpoint: the agent's health port (--health-port,
// TORCHELASTIC_HEALTH_CHECK_PORT). GET /healthz (and /) answers from
// HealthVerdict (decide/health_verdict.h): 200 while the agent's loop ticks
// and, in elastic runs, the rendezvous answers; 503 with the reason
// otherwise, said in the log once per change, not per probe. GET /metrics
// answers the agent's counters (agent_metrics.h). Anything else is 404.
//
// The endpoint answers on the agent's one thread: a stalled loop answers no
// probe at all (docs/kubernetes.md), and its own timer records the loop's
// ticks. What it knows of the node it asks `state` at each request.
//
// Single-threaded: on the agent's io_context. Tests:
// tests/unit/launcher_health_endpoint_test.cc.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "common/clock.h"
#include "common/status.h"
#include "launcher/decide/health_verdict.h"
#include "launcher/plan/launch_options.h"
#include "rendezvous/net/http_request.h"

namespace muster {
namespace rdzv {
class HttpServer;
}

class HealthEndpoint {
 public:
  // What the agent knows when a probe comes.
  struct NodeState {
    int attempt = 0;
    uint64_t store_refused = 0;
    // Elastic runs: the generation entered last, the rendezvous client's
    // last message (nullopt: none yet) and the silence after which it
    // fences (the rendezvous's timing once welcomed).
    std::optional<uint64_t> generation;
    std::optional<Time> last_contact;
    std::optional<std::chrono::milliseconds> fence_after;
  };
  using StateSource = std::function<NodeState()>;

  // Listens on --local-addr (all addresses without it) at --health-port and
  // logs event=health_listening with the port; an error names the setting
  // and the address. `contact_limit`: the rendezvous silence that fails the
  // probe (elastic runs; nullopt in static ones).
  static Result<std::unique_ptr<HealthEndpoint>> Start(
      boost::asio::io_context& io, const LaunchOptions& options,
      std::optional<std::chrono::milliseconds> contact_limit, StateSource state);
  ~HealthEndpoint();

  uint16_t port() const;
  // Stops listening and ticking (the agent is finishing).
  void Stop();

 private:
  HealthEndpoint(boost::asio::io_context& io, HealthLimits limits, StateSource state);
  void Tick();
  HealthVerdict Judge(const NodeState& node) const;
  rdzv::HttpResponse Answer(const rdzv::HttpRequest& request);

  HealthLimits limits_;
  HealthRecord record_;  // last_contact unused: the node's state gives it
  StateSource state_;
  bool last_said_healthy_ = true;
  bool stopped_ = false;
  std::unique_ptr<rdzv::HttpServer> server_;
  boost::asio::steady_timer timer_;
};

}  // namespace muster
