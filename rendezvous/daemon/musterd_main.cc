// musterd: the elastic rendezvous daemon.
//
//   musterd --host H --port P [--config FILE] [--token-file F] [--metrics-port M]
//           [--rdzv-conf k=v,...] [--max-connections N] [--inject crash-daemon,after=T]
//           [--etcd URL[,URL...] --advertise HOST:PORT [--etcd-prefix P]
//            [--etcd-cacert F] [--etcd-cert F --etcd-key F]]
//
// With --etcd it is one replica of a replicated rendezvous: the replicas
// elect a leader through etcd (rendezvous/replica/), only the leader serves
// agents, and the others refuse them naming the leader (PROTOCOL.md,
// "Replicas").
//
// The config file is JSON with the flags' names as keys, with underscores
// (daemon_flags.h: `port`, `token_file`, `rdzv_conf` as an object, ...);
// flags win. It may hold `//` and `/* */` comments, as the packaged
// /etc/muster/musterd.json does. Values from either source are held to the
// same ranges, and --rdzv-conf / rdzv_conf keys musterd does not know (a
// typo) are refused, not ignored.
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>

#include <sys/resource.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <csignal>
#include <cstdint>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/env_lookup.h"
#include "common/fault_spec.h"
#include "common/host_port.h"
#include "common/log_level.h"
#include "common/version.h"
#include "rendezvous/daemon/daemon_flags.h"
#include "rendezvous/daemon/daemon_http.h"
#include "rendezvous/daemon/rendezvous_server.h"
#include "rendezvous/net/http_server.h"
#include "rendezvous/net/tls_context.h"
#include "rendezvous/net/token_file.h"
#include "rendezvous/replica/replica_node.h"
#include "rendezvous/state/settings.h"

namespace {

using muster::rdzv::DaemonFlags;

// The replica's options from the flags, or nullopt when --etcd is not given;
// the error names the bad flag.
muster::Result<std::optional<muster::rdzv::replica::ReplicaOptions>> ReplicaOptionsOf(
    const DaemonFlags& flags) {
  using Options = std::optional<muster::rdzv::replica::ReplicaOptions>;
  if (flags.etcd.empty()) {
    if (flags.etcd_tls != muster::rdzv::replica::EtcdTls{}) {
      return muster::Status::InvalidArgument(
          "--etcd-cacert, --etcd-cert and --etcd-key need --etcd (they secure a replica's etcd)");
    }
    if (!flags.advertise.empty()) {
      return muster::Status::InvalidArgument("--advertise '" + flags.advertise +
                                             "' needs --etcd (it names a replica)");
    }
    return Options();
  }
  auto endpoints = muster::rdzv::replica::ParseEtcdEndpoints(flags.etcd);
  if (!endpoints.ok())
    return muster::Status::InvalidArgument("--etcd: " + endpoints.status().message());
  if (auto tls = muster::rdzv::replica::CheckEtcdTls(flags.etcd_tls, *endpoints); !tls.ok()) {
    return tls;
  }
  auto advertised = muster::SplitEndpoint(flags.advertise);
  if (flags.advertise.empty() || !advertised.ok() || !advertised->port || *advertised->port == 0) {
    return muster::Status::InvalidArgument(
        "--advertise '" + flags.advertise +
        "' must be the HOST:PORT agents reach this replica at (--etcd needs it)");
  }
  if (flags.etcd_prefix.empty() || flags.etcd_prefix.front() != '/') {
    return muster::Status::InvalidArgument("--etcd-prefix '" + flags.etcd_prefix +
                                           "' must start with '/'");
  }
  muster::rdzv::replica::ReplicaOptions options;
  options.etcd = *endpoints;
  options.etcd_tls = flags.etcd_tls;
  options.prefix = flags.etcd_prefix + (flags.etcd_prefix.back() == '/' ? "" : "/");
  options.key = options.prefix + "musterd/leader";
  options.advertise = flags.advertise;
  return Options(options);
}

int Fail(const std::string& message) {
  std::cerr << "musterd: error: " << message << "\n";
  return 2;
}

}  // namespace

// When --inject (or MUSTER_INJECT) asks the daemon to crash: the earliest
// crash-daemon's time, nullopt when none does. Faults carried out by muster
// are refused on musterd's command line; in MUSTER_INJECT, shared with the
// agents, they are theirs and left alone.
muster::Result<std::optional<std::chrono::milliseconds>> DaemonCrashTime(const DaemonFlags& flags) {
  std::string text;
  for (const auto& spec : flags.inject) text += (text.empty() ? "" : ";") + spec;
  auto plan = muster::ResolveFaultPlan(text, "--inject", flags.inject_seed, muster::SystemEnv());
  if (!plan.ok()) return plan.status();
  std::optional<std::chrono::milliseconds> crash;
  if (!*plan) return crash;
  for (const auto& spec : (*plan)->faults) {
    if (spec.kind != muster::FaultKind::kCrashDaemon) {
      if (!flags.inject.empty()) {
        return muster::Status::InvalidArgument(
            "--inject: '" + spec.text + "': " + std::string(muster::FaultKindName(spec.kind)) +
            " is carried out by muster, not musterd");
      }
      continue;
    }
    if (!crash || *spec.after < *crash) crash = *spec.after;
  }
  return crash;
}

int main(int argc, char** argv) {
  auto read = muster::rdzv::ReadDaemonFlags(std::vector<std::string>(argv + 1, argv + argc));
  if (!read.ok()) return Fail(read.status().message());
  DaemonFlags flags = std::move(read).value();
  if (flags.help) {
    std::cout << muster::rdzv::DaemonHelpText() << "\n";
    return 0;
  }
  if (flags.version) {
    std::cout << "musterd " << muster::kVersion << "\n";
    return 0;
  }

  if (!flags.config.empty()) {
    if (auto config = muster::rdzv::ApplyDaemonConfigFile(flags); !config.ok()) {
      return Fail(config.message());
    }
  }
  if (auto ranges = muster::rdzv::CheckDaemonRanges(flags); !ranges.ok()) {
    return Fail(ranges.message());
  }
  std::map<std::string, std::string> conf = flags.config_rdzv_conf;
  auto cli_conf = muster::rdzv::Settings::ParseConfText(flags.rdzv_conf);
  if (!cli_conf.ok()) return Fail("--rdzv-conf: " + cli_conf.status().message());
  if (auto known = muster::rdzv::Settings::RefuseUnknownKeys(*cli_conf); !known.ok()) {
    return Fail(known.message());
  }
  for (auto& [k, v] : *cli_conf) conf[k] = v;
  auto settings = muster::rdzv::Settings::FromConf(conf);
  if (!settings.ok()) return Fail(settings.status().message());

  muster::rdzv::ServerOptions options;
  options.host = flags.host;
  options.port = static_cast<uint16_t>(flags.port);
  options.settings = *settings;
  options.max_connections = static_cast<size_t>(flags.max_connections);
  options.node_metrics = static_cast<int>(flags.node_metrics);
  std::vector<std::string> file_warnings;  // logged once the logger is up
  if (!flags.token_file.empty()) {
    auto token = muster::rdzv::ReadTokenFile(flags.token_file);
    if (!token.ok()) return Fail(token.status().message());
    options.token = *token;
    if (auto loose = muster::rdzv::LooseFileWarning("--token-file", flags.token_file)) {
      file_warnings.push_back(*loose);
    }
  }
  const muster::rdzv::TlsServerFiles tls_files{{flags.tls_cert, "--tls-cert"},
                                               {flags.tls_key, "--tls-key"},
                                               {flags.tls_client_ca, "--tls-client-ca"}};
  if (tls_files.any()) {
    auto tls = muster::rdzv::TlsContext::ForServer(tls_files, &file_warnings);
    if (!tls.ok()) return Fail(tls.status().message());
    options.tls = *tls;
  }

  auto crash_after = DaemonCrashTime(flags);
  if (!crash_after.ok()) return Fail(crash_after.status().message());
  auto replica_options = ReplicaOptionsOf(flags);
  if (!replica_options.ok()) return Fail(replica_options.status().message());

  auto logger = std::make_shared<spdlog::logger>("musterd",
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e musterd %l: %v");
  muster::SetLogLevelFromEnv(*logger, muster::SystemEnv());
  spdlog::set_default_logger(logger);
  for (const std::string& warning : file_warnings) spdlog::warn("{}", warning);
  std::signal(SIGPIPE, SIG_IGN);
  // Each agent holds one connection: allow as many as the hard limit does.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }

  boost::asio::io_context io;
  auto server = muster::rdzv::RendezvousServer::Start(io, options);
  if (!server.ok()) return Fail(server.status().message());
  // A replica serves nobody until the election says it leads.
  std::unique_ptr<muster::rdzv::replica::ReplicaNode> replica;
  if (*replica_options) {
    muster::rdzv::ReplicaStatus starting;
    starting.replicated = true;
    starting.role = muster::rdzv::replica::Role::kStarting;
    (*server)->SetReplicaStatus(starting);
    auto* raw = server->get();
    replica = std::make_unique<muster::rdzv::replica::ReplicaNode>(
        **replica_options, [&io, raw](muster::rdzv::ReplicaStatus status) {
          boost::asio::post(io, [raw, status] { raw->SetReplicaStatus(status); });
        });
    // Budgets and settings outlive this leader: its successor reads them.
    raw->SetRunRecordSink([node = replica.get()](std::vector<muster::rdzv::RunRecord> records) {
      node->WriteRunRecords(std::move(records));
    });
    spdlog::info("event=replica etcd={} key={} advertise={}", flags.etcd, (*replica_options)->key,
                 flags.advertise);
  }
  std::unique_ptr<muster::rdzv::HttpServer> metrics;
  if (flags.metrics_port >= 0) {
    auto* raw = server->get();
    // The same TLS and token as the rendezvous port: the page shows every
    // run's hosts.
    muster::rdzv::HttpServerOptions http{flags.host, static_cast<uint16_t>(flags.metrics_port),
                                         "--metrics-port", options.tls, options.token};
    auto started = muster::rdzv::HttpServer::Start(
        io, std::move(http), [raw](const muster::rdzv::HttpRequest& request) {
          return muster::rdzv::AnswerDaemonHttp(*raw, request);
        });
    if (!started.ok()) return Fail(started.status().message());
    metrics = std::move(started).value();
    spdlog::info("event=metrics_listening port={}", metrics->port());
  }
  // Tests and scripts read the bound port from this line.
  std::cout << "musterd listening on " << flags.host << ":" << (*server)->port() << std::endl;
  if (replica) replica->Start();

  boost::asio::steady_timer crash_timer(io);
  if (*crash_after) {
    spdlog::info("event=inject_plan crash_daemon_after_ms={}", (*crash_after)->count());
    crash_timer.expires_after(**crash_after);
    crash_timer.async_wait([](const boost::system::error_code& ec) {
      if (ec) return;
      spdlog::warn("event=inject fault=crash-daemon");
      spdlog::default_logger()->flush();
      std::raise(SIGKILL);
    });
  }

  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code&, int sig) {
    spdlog::info("event=stopping signal={}", sig);
    // Stops serving, then gives the lease back (a lead_margin later): a
    // standby leads then instead of when the lease expires.
    (*server)->Stop();
    if (replica) replica->Stop();
    if (metrics) metrics->Stop();
    crash_timer.cancel();
    io.stop();
  });
  io.run();
  return 0;
}
