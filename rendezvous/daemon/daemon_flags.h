// musterd's flags and --config keys: one table (daemon_flags.cc) in the
// shape of muster's own (launcher/cli/flag_table.h: name, JSON types of the
// config key, help group, metavar, default, help), from which the command
// line, the --config keys, the range checks, --help, the man page's list of
// config keys and the bash completion's flag lists are all derived.
//
// The command line is read with the rules and shown in the --help layout of
// muster itself (common/option_parser.h): dashes or underscores, a unique
// prefix for a whole flag, "did you mean" for a typo, one error line naming
// the flag and quoting the bad value. The --config file is one JSON object
// whose keys are the flags' names with underscores; a flag on the command
// line wins over its key.
//
// The checks across flags (--etcd and its companions) stay in
// musterd_main.cc.
//
// Thread-safety: pure functions (ApplyDaemonConfigFile reads a file).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "rendezvous/protocol/messages.h"
#include "rendezvous/replica/etcd_client.h"

namespace muster::rdzv {

inline constexpr int64_t kMaxPort = 65535;
inline constexpr int64_t kMaxConnections = 1000000;

struct DaemonFlags {
  std::string host = "0.0.0.0";
  int64_t port = kDefaultRendezvousPort;
  std::string config;
  std::string token_file;
  std::string tls_cert;       // --tls-cert: serve TLS with this certificate
  std::string tls_key;        // --tls-key
  std::string tls_client_ca;  // --tls-client-ca: mutual TLS
  int64_t metrics_port = -1;  // -1: no metrics server
  int64_t node_metrics = 0;   // per-node series for runs up to this many nodes
  std::string rdzv_conf;      // the command line's K=V,... text
  // The config file's rdzv_conf object, its values as text; --rdzv-conf's
  // keys win over it.
  std::map<std::string, std::string> config_rdzv_conf;
  int64_t max_connections = 20000;
  std::vector<std::string> inject;  // fault specs; only crash-daemon is musterd's
  std::optional<uint64_t> inject_seed;
  std::string etcd;       // empty: not replicated
  std::string advertise;  // HOST:PORT agents reach this replica at
  std::string etcd_prefix = "/muster";
  replica::EtcdTls etcd_tls;  // --etcd-cacert, --etcd-cert, --etcd-key

  std::set<std::string> given;  // canonical names of the flags on the command line
  bool help = false;            // -h/--help: print DaemonHelpText(), exit 0
  bool version = false;         // --version: print "musterd VERSION", exit 0
};

// args: argv[1..]. Fails with InvalidArgument, one line: an unknown flag
// ("unknown flag '--prot'; did you mean '--port'?"), an ambiguous prefix
// ("ambiguous flag '--etcd-c' could match --etcd-cacert, --etcd-cert"), a
// missing value, an operand, or a value out of range
// ("--port: '70000' must be an integer from 0 to 65535").
Result<DaemonFlags> ReadDaemonFlags(const std::vector<std::string>& args);

// Reads the JSON object in `text` (`//` and `/* */` comments allowed) as
// the --config file `path` into `flags`, leaving alone what the command
// line gave. Fails with InvalidArgument, one line starting "--config: ":
// not a JSON object, a key that is unknown or has the wrong type (quoting
// key and value), an unknown rdzv_conf key.
Status ApplyDaemonConfig(std::string_view text, const std::string& path, DaemonFlags& flags);
// The same for the file at flags.config: "--config: cannot read 'PATH'"
// when it cannot be read.
Status ApplyDaemonConfigFile(DaemonFlags& flags);

// The merged values held to the ranges of their flags; the error quotes the
// value by its config key ("port=70000 must be an integer from 0 to 65535"),
// after "--config 'PATH' or flags: " when a config file was read.
Status CheckDaemonRanges(const DaemonFlags& flags);

// `musterd --help`, in muster's layout. No trailing newline.
std::string DaemonHelpText();

// What the man page and the bash completion say of the flags, derived from
// the table (packaging/man/musterd.1 and packaging/completion/musterd hold
// them between "generated" markers; tests/unit/rdzv_daemon_flags_test.cc
// fails when they drift, and `musterd-docs` prints them).
//   man:        the --config entry's sentence naming every key by its JSON
//               type (the per-flag entries are written by hand);
//   completion: the bash arrays of value flags, switches and file flags.
std::string DaemonManOptions();
std::string DaemonCompletionLists();

}  // namespace muster::rdzv
