// ServeRendezvousIfHost: the rendezvous this agent serves itself, embedded
// (is_host=1, --standalone, or torchrun's c10d rule: host_rules.h's
// DecideRendezvousRole), started on the agent's io_context.
//   - Serving: the server; `config.is_host` becomes true, and `config.port`
//     the port it took when it was 0.
//   - Joining one served elsewhere (the rule says so, the port is in use, or
//     TLS lacks this agent's certificate while nobody asked it to serve):
//     null, with one log line saying why.
//   - Asked to serve and unable to: the error.
// Tests: tests/unit/launcher_embedded_rendezvous_test.cc.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>

#include "common/status.h"
#include "launcher/plan/elastic_config.h"
#include "rendezvous/daemon/rendezvous_server.h"

namespace muster {

Result<std::unique_ptr<rdzv::RendezvousServer>> ServeRendezvousIfHost(boost::asio::io_context& io,
                                                                      ElasticConfig& config);

}  // namespace muster
