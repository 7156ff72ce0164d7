// The Agent's health endpoint (--health-port, TORCHELASTIC_HEALTH_CHECK_PORT):
// HealthEndpoint (health_endpoint.h) serves it; the agent says what it
// knows of the node at each probe.
#include "common/clock.h"
#include "launcher/agent/agent.h"

namespace muster {

Status Agent::StartHealthEndpoint() {
  if (!options_.health_port) return Status::Ok();
  std::optional<std::chrono::milliseconds> contact_limit;
  if (elastic_) {
    // The silence after which this agent fences its workers: with replicas,
    // standbys that answer buy time up to failover_timeout (fence_rule.h).
    contact_limit = elastic_->replicas.size() > 1 ? elastic_->settings.failover_timeout
                                                  : elastic_->settings.fence_timeout;
  }
  auto started = HealthEndpoint::Start(io_, options_, contact_limit, [this] {
    HealthEndpoint::NodeState state;
    state.attempt = attempt();
    state.store_refused = store_ ? store_->refused_connections() : 0;
    if (elastic_) state.generation = node_.generation;
    if (client_) {
      state.last_contact = client_->last_heard();
      state.fence_after = client_->fence_after();
    }
    return state;
  });
  if (!started.ok()) return started.status();
  health_ = std::move(started).value();
  return Status::Ok();
}

}  // namespace muster
