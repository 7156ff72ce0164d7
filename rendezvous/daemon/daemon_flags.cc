#include "rendezvous/daemon/daemon_flags.h"

#include "common/decimal.h"
#include "common/option_parser.h"
#include "common/quote.h"

namespace muster::rdzv {
namespace {

constexpr const char* kListening = "Listening";
constexpr const char* kReplicas = "Replicas (leader election through etcd)";
constexpr const char* kFaults = "Fault injection";
constexpr const char* kGeneral = "General";

// Help order. packaging/man/musterd.1 and packaging/completion/musterd list
// the same flags (tests/packaging/docs_cover_flags_test.py).
constexpr OptionSpec kOptions[] = {
    {"host", "", 0, OptionKind::kValue, kListening, "ADDR", "0.0.0.0 (every IPv4 interface)",
     "Address to listen on, for the rendezvous and for --metrics-port."},
    {"port", "", 0, OptionKind::kValue, kListening, "PORT", "29400, as torchrun's c10d",
     "Port to listen on, 0 to 65535; 0 picks a free port (printed)."},
    {"config", "", 0, OptionKind::kValue, kListening, "FILE", "",
     "JSON file with the flags' settings as keys with underscores (port, token_file, "
     "rdzv_conf as an object, ...); flags win over it."},
    {"token-file", "", 0, OptionKind::kValue, kListening, "FILE", "none (any agent is admitted)",
     "Shared secret agents must present (muster --rdzv-conf token_file=FILE)."},
    {"metrics-port", "", 0, OptionKind::kValue, kListening, "PORT", "no metrics server",
     "Also serve Prometheus text metrics at /metrics on this port; 0 picks a free port."},
    {"rdzv-conf", "", 0, OptionKind::kValue, kListening, "K=V,...", "",
     "Rendezvous timeouts in seconds, e.g. heartbeat_timeout=1.5; an unknown key is refused."},
    {"max-connections", "", 0, OptionKind::kValue, kListening, "N", "20000",
     "Connection limit, 1 to 1000000 (each agent holds one)."},
    {"etcd", "", 0, OptionKind::kValue, kReplicas, "[http://|https://]HOST:PORT,...",
     "not replicated",
     "Run as one replica of a replicated rendezvous: the replicas elect a leader through "
     "these etcd endpoints, and only the leader serves agents."},
    {"advertise", "", 0, OptionKind::kValue, kReplicas, "HOST:PORT", "",
     "With --etcd (required there): the address agents reach this replica at."},
    {"etcd-prefix", "", 0, OptionKind::kValue, kReplicas, "PREFIX", "/muster",
     "With --etcd: the prefix of muster's keys in etcd."},
    {"etcd-cacert", "", 0, OptionKind::kValue, kReplicas, "FILE", "the system's trusted CAs",
     "https:// etcd: the CA its certificate chains to (PEM)."},
    {"etcd-cert", "", 0, OptionKind::kValue, kReplicas, "FILE", "",
     "https:// etcd: this replica's client certificate (PEM), with --etcd-key."},
    {"etcd-key", "", 0, OptionKind::kValue, kReplicas, "FILE", "",
     "https:// etcd: the key of --etcd-cert (PEM)."},
    {"inject", "", 0, OptionKind::kValue, kFaults, "SPEC", "$MUSTER_INJECT, else none",
     "Fault to inject (repeatable): crash-daemon,after=T makes the daemon SIGKILL itself T "
     "after its start.",
     /*repeatable=*/true},
    {"inject-seed", "", 0, OptionKind::kValue, kFaults, "N", "$MUSTER_INJECT_SEED, else 0",
     "Seed of --inject's random choices (ranges)."},
    {"help", "", 'h', OptionKind::kHelp, kGeneral, "", "", "Show this help and exit."},
    {"version", "", 0, OptionKind::kVersion, kGeneral, "", "", "Show the version and exit."},
};

constexpr const char* kIntro =
    "usage: musterd [options]\n"
    "\n"
    "The muster elastic rendezvous daemon: the agents of a job's nodes meet at it\n"
    "(muster --rdzv-backend c10d --rdzv-endpoint HOST:PORT ...). Once listening it\n"
    "prints \"musterd listening on HOST:PORT\"; its log goes to stderr, one line per\n"
    "event (MUSTER_LOG_LEVEL). It stops on SIGINT or SIGTERM; `muster status`\n"
    "shows the runs it serves.\n";

// A decimal integer from `lo` to `hi`; the error names the flag and
// quotes the value.
// REQUIRES: 0 <= lo <= hi (every range musterd's flags have).
Result<int64_t> IntegerIn(const char* flag, const std::string& text, int64_t lo, int64_t hi) {
  const std::optional<uint64_t> value = ParseDecimal(text, static_cast<uint64_t>(hi));
  if (!value || static_cast<int64_t>(*value) < lo) {
    return Status::InvalidArgument(std::string(flag) + ": " + Quote(text) +
                                   " must be an integer from " + std::to_string(lo) + " to " +
                                   std::to_string(hi));
  }
  return static_cast<int64_t>(*value);
}

}  // namespace

Result<DaemonFlags> ReadDaemonFlags(const std::vector<std::string>& args) {
  auto parsed = ParseOptions(args, kOptions);
  if (!parsed.ok()) return parsed.status();
  DaemonFlags flags;
  flags.help = parsed->help;
  flags.version = parsed->version;
  for (const auto& [name, values] : parsed->values) flags.given.insert(name);

  auto text = [&](const char* name, std::string& field) {
    if (const std::string* value = parsed->Last(name)) field = *value;
  };
  text("host", flags.host);
  text("config", flags.config);
  text("token-file", flags.token_file);
  text("rdzv-conf", flags.rdzv_conf);
  text("etcd", flags.etcd);
  text("advertise", flags.advertise);
  text("etcd-prefix", flags.etcd_prefix);
  text("etcd-cacert", flags.etcd_tls.cacert);
  text("etcd-cert", flags.etcd_tls.cert);
  text("etcd-key", flags.etcd_tls.key);
  flags.inject = parsed->All("inject");

  struct Ranged {
    const char* name;
    int64_t& field;
    int64_t lo, hi;
  };
  for (const Ranged& r : {Ranged{"port", flags.port, 0, kMaxPort},
                          Ranged{"metrics-port", flags.metrics_port, 0, kMaxPort},
                          Ranged{"max-connections", flags.max_connections, 1, kMaxConnections}}) {
    const std::string* value = parsed->Last(r.name);
    if (value == nullptr) continue;
    auto number = IntegerIn((std::string("--") + r.name).c_str(), *value, r.lo, r.hi);
    if (!number.ok()) return number.status();
    r.field = *number;
  }
  if (const std::string* seed = parsed->Last("inject-seed")) {
    flags.inject_seed = ParseDecimal(*seed);
    if (!flags.inject_seed) {
      return Status::InvalidArgument("--inject-seed: " + Quote(*seed) +
                                     " must be a non-negative integer");
    }
  }
  return flags;
}

std::string DaemonHelpText() { return OptionsHelp(kIntro, kOptions); }

}  // namespace muster::rdzv
