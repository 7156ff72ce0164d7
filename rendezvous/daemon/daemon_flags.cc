#include "rendezvous/daemon/daemon_flags.h"

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/decimal.h"
#include "common/flag_match.h"
#include "common/json_type.h"
#include "common/option_parser.h"
#include "common/quote.h"
#include "rendezvous/state/settings.h"

namespace muster::rdzv {
namespace {

using Json = nlohmann::json;

constexpr const char* kListening = "Listening";
constexpr const char* kReplicas = "Replicas (leader election through etcd)";
constexpr const char* kFaults = "Fault injection";
constexpr const char* kGeneral = "General";

// How a flag's value lands in DaemonFlags. One of them is set, or none for
// -h/--help and --version.
struct DaemonFlag {
  OptionSpec option;  // the command line and --help
  // Its --config key (the name with underscores) takes these JSON types:
  // kJsonString, kJsonInteger or kJsonObject (rdzv_conf); 0: no key.
  unsigned json_types;
  // A text value, as given.
  std::string& (*text)(DaemonFlags&) = nullptr;
  // An integer from `lo` to `hi` (musterd's ranges all start at 0 or more);
  // `unset`, the default, means none and is not range-checked.
  int64_t& (*integer)(DaemonFlags&) = nullptr;
  int64_t lo = 0;
  int64_t hi = 0;
  std::optional<int64_t> unset = std::nullopt;
  // Every value given (a repeatable flag).
  std::vector<std::string>& (*list)(DaemonFlags&) = nullptr;
  // A non-negative integer, any size.
  std::optional<uint64_t>& (*seed)(DaemonFlags&) = nullptr;
  // Values completed as file names.
  bool file = false;
};

// Help order. The man page's synopsis and config keys and the completion's
// flag lists are derived from it (DaemonManOptions, DaemonCompletionLists).
const DaemonFlag kFlags[] = {
    {.option = {"host", "", 0, OptionKind::kValue, kListening, "ADDR",
                "0.0.0.0 (every IPv4 interface)",
                "Address to listen on, for the rendezvous and for --metrics-port."},
     .json_types = kJsonString,
     .text = [](DaemonFlags& f) -> std::string& { return f.host; }},
    {.option = {"port", "", 0, OptionKind::kValue, kListening, "PORT", "29400, as torchrun's c10d",
                "Port to listen on, 0 to 65535; 0 picks a free port (printed)."},
     .json_types = kJsonInteger,
     .integer = [](DaemonFlags& f) -> int64_t& { return f.port; },
     .lo = 0,
     .hi = kMaxPort},
    {.option = {"config", "", 0, OptionKind::kValue, kListening, "FILE", "",
                "JSON file with the flags' settings as keys with underscores (port, token_file, "
                "rdzv_conf as an object, ...); flags win over it."},
     .json_types = 0,
     .text = [](DaemonFlags& f) -> std::string& { return f.config; },
     .file = true},
    {.option = {"token-file", "", 0, OptionKind::kValue, kListening, "FILE",
                "none (any agent is admitted)",
                "Shared secret agents must present (muster --rdzv-conf token_file=FILE)."},
     .json_types = kJsonString,
     .text = [](DaemonFlags& f) -> std::string& { return f.token_file; },
     .file = true},
    {.option = {"tls-cert", "", 0, OptionKind::kValue, kListening, "FILE", "plain TCP",
                "Serve agents over TLS with this certificate (PEM; its names are the ones "
                "agents dial), with --tls-key."},
     .json_types = kJsonString,
     .text = [](DaemonFlags& f) -> std::string& { return f.tls_cert; },
     .file = true},
    {.option = {"tls-key", "", 0, OptionKind::kValue, kListening, "FILE", "",
                "The private key of --tls-cert (PEM); keep it readable by musterd only."},
     .json_types = kJsonString,
     .text = [](DaemonFlags& f) -> std::string& { return f.tls_key; },
     .file = true},
    {.option = {"tls-client-ca", "", 0, OptionKind::kValue, kListening, "FILE",
                "no client certificate asked",
                "Mutual TLS: every agent and muster status must present a certificate that "
                "chains to this CA (PEM)."},
     .json_types = kJsonString,
     .text = [](DaemonFlags& f) -> std::string& { return f.tls_client_ca; },
     .file = true},
    {.option = {"metrics-port", "", 0, OptionKind::kValue, kListening, "PORT", "no metrics server",
                "Also serve the status page at /, its JSON at /status.json and Prometheus text "
                "metrics at /metrics on this port, over the daemon's TLS and behind its token; 0 "
                "picks a free port."},
     .json_types = kJsonInteger,
     .integer = [](DaemonFlags& f) -> int64_t& { return f.metrics_port; },
     .lo = 0,
     .hi = kMaxPort,
     .unset = -1},
    {.option = {"node-metrics", "", 0, OptionKind::kValue, kListening, "N", "0: no per-node series",
                "Also export per-node metrics (muster_node_*) for runs of at most N nodes; "
                "every other series is per run, so cardinality stays bounded."},
     .json_types = kJsonInteger,
     .integer = [](DaemonFlags& f) -> int64_t& { return f.node_metrics; },
     .lo = 0,
     .hi = 100000},
    {.option = {"rdzv-conf", "", 0, OptionKind::kValue, kListening, "K=V,...", "",
                "Rendezvous timeouts in seconds, e.g. heartbeat_timeout=1.5; an unknown key is "
                "refused."},
     .json_types = kJsonObject,
     .text = [](DaemonFlags& f) -> std::string& { return f.rdzv_conf; }},
    {.option = {"max-connections", "", 0, OptionKind::kValue, kListening, "N", "20000",
                "Connection limit, 1 to 1000000 (each agent holds one)."},
     .json_types = kJsonInteger,
     .integer = [](DaemonFlags& f) -> int64_t& { return f.max_connections; },
     .lo = 1,
     .hi = kMaxConnections},
    {.option = {"etcd", "", 0, OptionKind::kValue, kReplicas, "[http://|https://]HOST:PORT,...",
                "not replicated",
                "Run as one replica of a replicated rendezvous: the replicas elect a leader "
                "through these etcd endpoints, and only the leader serves agents."},
     .json_types = kJsonString,
     .text = [](DaemonFlags& f) -> std::string& { return f.etcd; }},
    {.option = {"advertise", "", 0, OptionKind::kValue, kReplicas, "HOST:PORT", "",
                "With --etcd (required there): the address agents reach this replica at."},
     .json_types = kJsonString,
     .text = [](DaemonFlags& f) -> std::string& { return f.advertise; }},
    {.option = {"etcd-prefix", "", 0, OptionKind::kValue, kReplicas, "PREFIX", "/muster",
                "With --etcd: the prefix of muster's keys in etcd."},
     .json_types = kJsonString,
     .text = [](DaemonFlags& f) -> std::string& { return f.etcd_prefix; }},
    {.option = {"etcd-cacert", "", 0, OptionKind::kValue, kReplicas, "FILE",
                "the system's trusted CAs",
                "https:// etcd: the CA its certificate chains to (PEM)."},
     .json_types = kJsonString,
     .text = [](DaemonFlags& f) -> std::string& { return f.etcd_tls.cacert; },
     .file = true},
    {.option = {"etcd-cert", "", 0, OptionKind::kValue, kReplicas, "FILE", "",
                "https:// etcd: this replica's client certificate (PEM), with --etcd-key."},
     .json_types = kJsonString,
     .text = [](DaemonFlags& f) -> std::string& { return f.etcd_tls.cert; },
     .file = true},
    {.option = {"etcd-key", "", 0, OptionKind::kValue, kReplicas, "FILE", "",
                "https:// etcd: the key of --etcd-cert (PEM)."},
     .json_types = kJsonString,
     .text = [](DaemonFlags& f) -> std::string& { return f.etcd_tls.key; },
     .file = true},
    {.option = {"inject", "", 0, OptionKind::kValue, kFaults, "SPEC", "$MUSTER_INJECT, else none",
                "Fault to inject (repeatable): crash-daemon,after=T makes the daemon SIGKILL "
                "itself T after its start.",
                /*repeatable=*/true},
     .json_types = 0,
     .list = [](DaemonFlags& f) -> std::vector<std::string>& { return f.inject; }},
    {.option = {"inject-seed", "", 0, OptionKind::kValue, kFaults, "N",
                "$MUSTER_INJECT_SEED, else 0", "Seed of --inject's random choices (ranges)."},
     .json_types = 0,
     .seed = [](DaemonFlags& f) -> std::optional<uint64_t>& { return f.inject_seed; }},
    {.option = {"help", "", 'h', OptionKind::kHelp, kGeneral, "", "", "Show this help and exit."},
     .json_types = 0},
    {.option = {"version", "", 0, OptionKind::kVersion, kGeneral, "", "",
                "Show the version and exit."},
     .json_types = 0},
};

// The command-line side of the table, as common/option_parser.h reads it.
const std::vector<OptionSpec>& Options() {
  static const std::vector<OptionSpec> options = [] {
    std::vector<OptionSpec> out;
    for (const DaemonFlag& flag : kFlags) out.push_back(flag.option);
    return out;
  }();
  return options;
}

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
Result<int64_t> IntegerIn(const std::string& flag, const std::string& text, int64_t lo,
                          int64_t hi) {
  const std::optional<uint64_t> value = ParseDecimal(text, static_cast<uint64_t>(hi));
  if (!value || static_cast<int64_t>(*value) < lo) {
    return Status::InvalidArgument(flag + ": " + Quote(text) + " must be an integer from " +
                                   std::to_string(lo) + " to " + std::to_string(hi));
  }
  return static_cast<int64_t>(*value);
}

// A JSON integer as int64; nullopt for other types and for integers beyond
// int64 (so a huge value cannot wrap into range).
std::optional<int64_t> JsonInteger(const Json& value) {
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  return std::nullopt;
}

const DaemonFlag* FlagOfKey(std::string_view key) {
  for (const DaemonFlag& flag : kFlags) {
    if (flag.json_types != 0 && UnderscoredName(flag.option.name) == key) return &flag;
  }
  return nullptr;
}

// Sets `flag` from its config key's `value`; false when the value has a
// type the key does not take. An rdzv_conf object's keys are checked here.
Result<bool> ApplyConfigValue(const DaemonFlag& flag, const Json& value, const std::string& path,
                              DaemonFlags& flags) {
  const bool given = flags.given.contains(std::string(flag.option.name));
  if ((flag.json_types & kJsonString) && value.is_string()) {
    if (!given) flag.text(flags) = value.get<std::string>();
    return true;
  }
  if (flag.json_types & kJsonInteger) {
    const std::optional<int64_t> integer = JsonInteger(value);
    if (!integer) return false;
    if (!given) flag.integer(flags) = *integer;
    return true;
  }
  if ((flag.json_types & kJsonObject) && value.is_object()) {
    for (auto& [k, v] : value.items()) {
      flags.config_rdzv_conf[k] = v.is_string() ? v.get<std::string>() : v.dump();
    }
    if (auto known = Settings::RefuseUnknownKeys(flags.config_rdzv_conf); !known.ok()) {
      return Status::InvalidArgument("--config: '" + path + "': " + known.message());
    }
    return true;
  }
  return false;
}

// Appends roff lines naming `keys` in bold, separated by commas, the last
// one followed by the line `after`.
void RoffKeys(std::string& out, const std::vector<std::string>& keys, const std::string& after) {
  for (size_t i = 0; i < keys.size(); ++i) {
    out += i + 1 == keys.size() ? ".B " + keys[i] + "\n" + after + "\n" : ".BR " + keys[i] + " ,\n";
  }
}

}  // namespace

Result<DaemonFlags> ReadDaemonFlags(const std::vector<std::string>& args) {
  auto parsed = ParseOptions(args, Options());
  if (!parsed.ok()) return parsed.status();
  DaemonFlags flags;
  flags.help = parsed->help;
  flags.version = parsed->version;
  for (const auto& [name, values] : parsed->values) flags.given.insert(name);
  for (const DaemonFlag& flag : kFlags) {
    if (flag.list) {
      flag.list(flags) = parsed->All(flag.option.name);
      continue;
    }
    const std::string* value = parsed->Last(flag.option.name);
    if (value == nullptr) continue;
    const std::string name = "--" + std::string(flag.option.name);
    if (flag.text) {
      flag.text(flags) = *value;
    } else if (flag.integer) {
      auto number = IntegerIn(name, *value, flag.lo, flag.hi);
      if (!number.ok()) return number.status();
      flag.integer(flags) = *number;
    } else if (flag.seed) {
      flag.seed(flags) = ParseDecimal(*value);
      if (!flag.seed(flags)) {
        return Status::InvalidArgument(name + ": " + Quote(*value) +
                                       " must be a non-negative integer");
      }
    }
  }
  return flags;
}

Status ApplyDaemonConfig(std::string_view text, const std::string& path, DaemonFlags& flags) {
  auto doc = Json::parse(text, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::InvalidArgument("--config: '" + path + "' is not a JSON object");
  }
  for (auto& [key, value] : doc.items()) {
    const DaemonFlag* flag = FlagOfKey(key);
    Result<bool> applied =
        flag == nullptr ? Result<bool>(false) : ApplyConfigValue(*flag, value, path, flags);
    if (!applied.ok()) return applied.status();
    if (!*applied) {
      return Status::InvalidArgument("--config: key '" + key + "' with value " + value.dump() +
                                     " is unknown or has the wrong type");
    }
  }
  return Status::Ok();
}

Status ApplyDaemonConfigFile(DaemonFlags& flags) {
  std::ifstream in(flags.config);
  if (!in) return Status::InvalidArgument("--config: cannot read '" + flags.config + "'");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return ApplyDaemonConfig(text, flags.config, flags);
}

Status CheckDaemonRanges(const DaemonFlags& flags) {
  DaemonFlags values = flags;  // the accessors write as well as read
  for (const DaemonFlag& flag : kFlags) {
    if (!flag.integer) continue;
    const int64_t value = flag.integer(values);
    if (flag.unset && value == *flag.unset) continue;
    if (value < flag.lo || value > flag.hi) {
      return Status::InvalidArgument(
          (flags.config.empty() ? "" : "--config '" + flags.config + "' or flags: ") +
          UnderscoredName(flag.option.name) + "=" + std::to_string(value) +
          " must be an integer from " + std::to_string(flag.lo) + " to " + std::to_string(flag.hi));
    }
  }
  return Status::Ok();
}

std::string DaemonHelpText() { return OptionsHelp(kIntro, Options()); }

std::string DaemonManOptions() {
  std::vector<std::string> strings;
  std::vector<std::string> integers;
  for (const DaemonFlag& flag : kFlags) {
    if (flag.json_types & kJsonString) strings.push_back(UnderscoredName(flag.option.name));
    if (flag.json_types & kJsonInteger) integers.push_back(UnderscoredName(flag.option.name));
  }
  std::string out = "It holds one JSON object with any of the keys\n";
  RoffKeys(out, integers, "(integers),");
  RoffKeys(out, strings, "(strings), and");
  out +=
      ".B rdzv_conf\n"
      "(an object of\n"
      ".BR \\-\\-rdzv\\-conf 's\n"
      "keys; a key given in\n"
      ".B \\-\\-rdzv\\-conf\n"
      "wins over the same key here).\n";
  return out;
}

namespace {

// Appends `word` to a space-separated list. (Built by append, not by
// `"..." + std::string`: GCC 12 at -O3 warns of a false overlap there.)
void AddWord(std::string& list, std::string_view word) {
  if (!list.empty()) list += ' ';
  list.append(word);
}

void AddArray(std::string& out, std::string_view name, const std::string& words) {
  out.append(name).append("=(").append(words).append(")\n");
}

}  // namespace

std::string DaemonCompletionLists() {
  std::string values;
  std::string switches;
  std::string files;
  for (const DaemonFlag& flag : kFlags) {
    AddWord(flag.option.kind == OptionKind::kValue ? values : switches, flag.option.name);
    if (flag.file) AddWord(files, flag.option.name);
  }
  std::string keys;
  for (std::string_view key : Settings::kKeys) AddWord(keys, key);
  std::string out;
  AddArray(out, "_musterd_value_flags", values);
  AddArray(out, "_musterd_switch_flags", switches);
  AddArray(out, "_musterd_file_flags", files);
  AddArray(out, "_musterd_rdzv_conf_keys", keys);
  return out;
}

}  // namespace muster::rdzv
