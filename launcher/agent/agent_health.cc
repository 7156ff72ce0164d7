// The Agent's health endpoint (--health-port, TORCHELASTIC_HEALTH_CHECK_PORT):
// GET /healthz (and /) answers from HealthVerdict (health_verdict.h), GET
// /metrics the agent's counters (agent_metrics.h). The shell's part: a
// timer that records the monitor loop's ticks, the rendezvous client's last
// answer, and the HTTP server, all on the agent's one thread.
#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "launcher/agent/agent.h"
#include "launcher/agent/agent_metrics.h"
#include "rendezvous/net/http_server.h"
#include "store/store_server.h"

namespace muster {
namespace {

// Prometheus' text exposition format, version 0.0.4.
constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace

Status Agent::StartHealthEndpoint() {
  if (!options_.health_port) return Status::Ok();
  std::optional<std::chrono::milliseconds> contact_limit;
  if (elastic_) {
    // The silence after which this agent fences its workers: with replicas,
    // standbys that answer buy time up to failover_timeout (fence_rule.h).
    contact_limit = elastic_->replicas.size() > 1 ? elastic_->settings.failover_timeout
                                                  : elastic_->settings.fence_timeout;
  }
  health_limits_ = HealthLimitsFor(options_.monitor_interval_s, contact_limit);
  health_.last_tick = Clock::now();

  rdzv::HttpServerOptions server;
  // Probes come from the kubelet, on the pod's address.
  server.host = options_.local_addr.empty() ? "0.0.0.0" : options_.local_addr;
  server.port = static_cast<uint16_t>(*options_.health_port);
  server.flag = options_.health_port_origin;
  auto started = rdzv::HttpServer::Start(
      io_, server, [this](const rdzv::HttpRequest& request) { return AnswerHealth(request); });
  if (!started.ok()) return started.status();
  health_server_ = std::move(started).value();
  spdlog::info("event=health_listening host={} port={} tick_ms={} stalled_after_ms={}{}",
               server.host, health_server_->port(), health_limits_.tick_period.count(),
               health_limits_.tick_limit.count(),
               contact_limit ? " contact_lost_after_ms=" + std::to_string(contact_limit->count())
                             : std::string());
  TickHealth();
  return Status::Ok();
}

void Agent::TickHealth() {
  health_.last_tick = Clock::now();
  health_timer_.expires_after(health_limits_.tick_period);
  health_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && !finished_) TickHealth();
  });
}

HealthVerdict Agent::CurrentHealth() const {
  HealthRecord record = health_;
  HealthLimits limits = health_limits_;
  if (client_) {
    record.last_contact = client_->last_heard();
    // The client fences by the rendezvous's timing once welcomed, which may
    // differ from this agent's --rdzv-conf: contact is lost when it fences.
    if (limits.contact_limit) limits.contact_limit = client_->fence_after();
  }
  return JudgeHealth(limits, record, Clock::now());
}

rdzv::HttpResponse Agent::AnswerHealth(const rdzv::HttpRequest& request) {
  rdzv::HttpResponse response;
  const HealthVerdict verdict = CurrentHealth();
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
    counters.store_refused = store_ ? store_->refused_connections() : 0;
    counters.healthy = verdict.healthy;
    counters.attempt = attempt();
    if (elastic_) {
      counters.generation = node_.generation;
      if (const auto heard = client_ ? client_->last_heard() : std::nullopt) {
        counters.rendezvous_silence_s =
            std::chrono::duration<double>(Clock::now() - *heard).count();
      }
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
