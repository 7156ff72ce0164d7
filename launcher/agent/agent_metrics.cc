#include "launcher/agent/agent_metrics.h"

#include <sstream>

namespace muster {

std::string AgentMetricsText(const AgentCounters& counters) {
  std::ostringstream out;
  auto metric = [&out](const char* name, const char* type, const char* help, double value) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n"
        << name << " " << value << "\n";
  };
  metric("muster_store_refused_total", "counter",
         "Connections the worker store hosted here refused (see --store-allow).",
         static_cast<double>(counters.store_refused));
  metric("muster_agent_healthy", "gauge", "1 while the health endpoint answers 200, else 0.",
         counters.healthy ? 1 : 0);
  metric("muster_agent_attempt", "gauge",
         "The attempt of the workers here (TORCHELASTIC_RESTART_COUNT).", counters.attempt);
  if (counters.generation) {
    metric("muster_agent_generation", "gauge", "The generation this node runs in (0: none yet).",
           static_cast<double>(*counters.generation));
  }
  if (counters.rendezvous_silence_s) {
    metric("muster_agent_rendezvous_silence_seconds", "gauge",
           "Seconds since the rendezvous last answered.", *counters.rendezvous_silence_s);
  }
  return out.str();
}

}  // namespace muster
