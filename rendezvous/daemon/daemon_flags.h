// musterd's command line: its flags in one table, read with the rules and
// shown in the --help layout of muster itself (common/option_parser.h):
// dashes or underscores, a unique prefix for a whole flag, "did you mean"
// for a typo, one error line naming the flag and quoting the bad value.
//
// The --config file and the checks across flags stay in musterd_main.cc;
// this reads and range-checks what the command line says.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
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
  int64_t metrics_port = -1;  // -1: no metrics server
  std::string rdzv_conf;
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

// `musterd --help`, in muster's layout. No trailing newline.
std::string DaemonHelpText();

}  // namespace muster::rdzv
