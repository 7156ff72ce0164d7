#include "launcher/agent/embedded_rendezvous.h"

#include <spdlog/spdlog.h>

#include "launcher/plan/host_rules.h"
#include "launcher/plan/local_identity.h"

namespace muster {

Result<std::unique_ptr<rdzv::RendezvousServer>> ServeRendezvousIfHost(boost::asio::io_context& io,
                                                                      ElasticConfig& config) {
  // Resolving names can block on DNS: only the c10d rule needs it.
  const bool endpoint_local =
      config.host_if_local && !config.is_host && EndpointIsThisMachine(config.host);
  const RendezvousRole role = DecideRendezvousRole(config, endpoint_local);
  if (role == RendezvousRole::kJoin) {
    if (config.host_if_local) {
      spdlog::info("event=rdzv_host serve=false why=\"endpoint host {} is not this machine\"",
                   config.host);
    }
    return std::unique_ptr<rdzv::RendezvousServer>();
  }
  if (config.tls_client && !config.tls_server) {
    constexpr const char* kNeeds =
        "serving the rendezvous over TLS needs tls_cert and tls_key in --rdzv-conf (this "
        "agent's certificate) besides tls_ca";
    if (role == RendezvousRole::kServe) return Status::InvalidArgument(kNeeds);
    spdlog::info("event=rdzv_host serve=false why=\"{}: joining whoever serves it\"", kNeeds);
    return std::unique_ptr<rdzv::RendezvousServer>();
  }
  rdzv::ServerOptions daemon;
  daemon.host = DaemonBindHost(config.loopback_only, config.host);
  daemon.tls = config.tls_server;
  daemon.port = config.port;
  daemon.settings = config.settings;
  daemon.token = config.token;
  daemon.inside_agent = true;
  auto started = rdzv::RendezvousServer::Start(io, daemon);
  if (!started.ok()) {
    if (role == RendezvousRole::kServe) return started.status();
    if (started.status().code() == Status::Code::kFailedPrecondition) {
      // Another agent on this host won the race, or a musterd runs here.
      spdlog::info(
          "event=rdzv_host serve=false why=\"port {} is in use: joining whoever serves it\"",
          config.port);
    } else {
      // Nobody asked this agent to serve (a privileged port, say): someone
      // else may, as torchrun assumes; join_timeout bounds the wait if not.
      spdlog::warn("event=rdzv_host serve=false why=\"{}; joining as a client\"",
                   started.status().message());
    }
    return std::unique_ptr<rdzv::RendezvousServer>();
  }
  std::unique_ptr<rdzv::RendezvousServer> server = std::move(started).value();
  if (config.port == 0) config.port = server->port();
  if (role == RendezvousRole::kServeIfFree) {
    spdlog::info("event=rdzv_host serve=true why=\"endpoint host {} is this machine\"",
                 config.host);
  }
  config.is_host = true;
  return server;
}

}  // namespace muster
