#include "launcher/agent/health_endpoint.h"

#include <spdlog/spdlog.h>

#include <string>
#include <utility>

#include "launcher/agent/agent_metrics.h"
#include "rendezvous/net/http_server.h"

namespace muster {
namespace {

// Prometheus' text exposition format, version 0.0.4.
constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace

HealthEndpoint::HealthEndpoint(boost::asio::io_context& io, HealthLimits limits, StateSource state)
    : limits_(limits), state_(std::move(state)), timer_(io) {
  record_.last_tick = Clock::now();
}

HealthEndpoint::~HealthEndpoint() = default;

Result<std::unique_ptr<HealthEndpoint>> HealthEndpoint::Start(
    boost::asio::io_context& io, const LaunchOptions& options,
    std::optional<std::chrono::milliseconds> contact_limit, StateSource state) {
  std::unique_ptr<HealthEndpoint> endpoint(new HealthEndpoint(
      io, HealthLimitsFor(options.monitor_interval_s, contact_limit), std::move(state)));
  rdzv::HttpServerOptions server;
  // Probes come from the kubelet, on the pod's address.
  server.host = options.local_addr.empty() ? "0.0.0.0" : options.local_addr;
  server.port = static_cast<uint16_t>(options.health_port.value_or(0));
  server.flag = options.health_port_origin;
  HealthEndpoint* self = endpoint.get();
  auto started = rdzv::HttpServer::Start(
      io, server, [self](const rdzv::HttpRequest& request) { return self->Answer(request); });
  if (!started.ok()) return started.status();
  endpoint->server_ = std::move(started).value();
  spdlog::info("event=health_listening host={} port={} tick_ms={} stalled_after_ms={}{}",
               server.host, endpoint->server_->port(), endpoint->limits_.tick_period.count(),
               endpoint->limits_.tick_limit.count(),
               contact_limit ? " contact_lost_after_ms=" + std::to_string(contact_limit->count())
                             : std::string());
  endpoint->Tick();
  return endpoint;
}

uint16_t HealthEndpoint::port() const { return server_->port(); }

void HealthEndpoint::Stop() {
  stopped_ = true;
  timer_.cancel();
  server_->Stop();
}

void HealthEndpoint::Tick() {
  record_.last_tick = Clock::now();
  timer_.expires_after(limits_.tick_period);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && !stopped_) Tick();
  });
}

HealthVerdict HealthEndpoint::Judge(const NodeState& node) const {
  HealthRecord record = record_;
  HealthLimits limits = limits_;
  record.last_contact = node.last_contact;
  // The client fences by the rendezvous's timing once welcomed, which may
  // differ from this agent's --rdzv-conf: contact is lost when it fences.
  if (limits.contact_limit && node.fence_after) limits.contact_limit = node.fence_after;
  return JudgeHealth(limits, record, Clock::now());
}

rdzv::HttpResponse HealthEndpoint::Answer(const rdzv::HttpRequest& request) {
  rdzv::HttpResponse response;
  const NodeState node = state_();
  const HealthVerdict verdict = Judge(node);
  if (request.path == "/healthz" || request.path == "/") {
    // Said once per change, not per probe: a probe every few seconds must
    // not fill the log.
    if (verdict.healthy != last_said_healthy_) {
      last_said_healthy_ = verdict.healthy;
      if (verdict.healthy) {
        spdlog::info("event=health_ok");
      } else {
        spdlog::warn("event=health_failing reason=\"{}\"", verdict.reason);
      }
    }
    response.status = verdict.healthy ? 200 : 503;
    response.body = verdict.healthy && verdict.reason == "ok" ? "ok\n"
                    : verdict.healthy                         ? "ok: " + verdict.reason + "\n"
                                                              : verdict.reason + "\n";
    return response;
  }
  if (request.path == "/metrics") {
    AgentCounters counters;
    counters.store_refused = node.store_refused;
    counters.healthy = verdict.healthy;
    counters.attempt = node.attempt;
    counters.generation = node.generation;
    if (node.generation && node.last_contact) {
      counters.rendezvous_silence_s =
          std::chrono::duration<double>(Clock::now() - *node.last_contact).count();
    }
    response.content_type = kMetricsContentType;
    response.body = AgentMetricsText(counters);
    return response;
  }
  response.status = 404;
  response.body = "not found: this agent serves /healthz and /metrics\n";
  return response;
}

}  // namespace muster
