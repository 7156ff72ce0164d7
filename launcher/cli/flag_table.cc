#include "launcher/cli/flag_table.h"

#include "common/decimal.h"
#include "common/flag_match.h"

#include "common/quote.h"
#include "launcher/cli/list_parsers.h"
#include "launcher/cli/number_parsers.h"
#include "launcher/cli/spec_parsers.h"
#include "rendezvous/state/settings.h"
#include "store/peer_admission.h"

namespace muster::cli {
namespace {

// Stores a parsed value, or passes the parse error on.
template <typename T, typename Field>
Status Assign(Result<T> parsed, Field& field) {
  if (!parsed.ok()) return parsed.status();
  field = std::move(*parsed);
  return Status::Ok();
}

using V = std::string_view;
using P = ParsedFlags;
constexpr unsigned kCliEnv = kFromCommandLine | kFromEnv;
constexpr unsigned kIntOrText = kJsonInteger | kJsonString;
constexpr unsigned kNumberOrText = kJsonNumber | kJsonString;
constexpr unsigned kListOrText = kJsonArray | kJsonInteger | kJsonString;

// constexpr: the table is built at compile time, so parsing costs no
// start-up work. Order is the --help order.
constexpr FlagSpec
    kFlags
        [] =
            {
                // Nodes and workers.
                {"nnodes", 0, ValueKind::kValue, kFromAll, kIntOrText, FlagGroup::kNodes,
                 "N|MIN:MAX", "1", "Number of nodes, or MIN:MAX nodes for an elastic job.",
                 [](V v, P& o) -> Status {
                   auto range = ParseNnodes(v);
                   if (!range.ok()) return range.status();
                   o.options.min_nodes = range->min;
                   o.options.max_nodes = range->max;
                   return Status::Ok();
                 }},
                {"nproc-per-node", 0, ValueKind::kValue, kFromAll, kIntOrText, FlagGroup::kNodes,
                 "N|gpu|cpu|auto", "1",
                 "Workers per node: a count, one per GPU, one per CPU core, or auto (GPUs if any, "
                 "else "
                 "cores).",
                 [](V v, P& o) { return Assign(ParseProcsPerNode(v), o.options.nproc_per_node); }},
                {"slurm", 0, ValueKind::kValue, kFromAll, kJsonString, FlagGroup::kNodes,
                 "auto|off", "auto",
                 "auto: inside an srun step, derive unset flags (nodes, node rank, rendezvous, "
                 "GPUs) from SLURM's variables; off: ignore them.",
                 [](V v, P& o) {
                   return Assign(ParseChoice(v, {"auto", "off"}), o.extras.slurm);
                 }},
                {"node-rank", 0, ValueKind::kValue, kFromAll, kIntOrText, FlagGroup::kNodes, "N",
                 "0", "Rank of this node for static rendezvous; 0 <= N < max nodes.",
                 [](V v, P& o) { return Assign(ParseNonNegativeInt(v), o.options.node_rank); }},

                // Rendezvous.
                {"rdzv-backend", 0, ValueKind::kValue, kFromAll, kJsonString,
                 FlagGroup::kRendezvous, "static|c10d|muster", "static",
                 "static: fixed node ranks; c10d or muster (a musterd daemon): elastic membership.",
                 [](V v, P& o) { return Assign(ParseRdzvBackend(v), o.options.rdzv_backend); }},
                {"rdzv-endpoint", 0, ValueKind::kValue, kFromAll, kJsonString,
                 FlagGroup::kRendezvous, "HOST[:PORT][,...]", "",
                 "Where the rendezvous runs (e.g. a musterd at node0:29400); several: the "
                 "replicas of a replicated musterd, tried in order.",
                 [](V v, P& o) { return Assign(ParseEndpoint(v), o.options.rdzv_endpoint); }},
                {"rdzv-id", 0, ValueKind::kValue, kFromAll, kJsonString, FlagGroup::kRendezvous,
                 "ID", "none", "Job id shared by all nodes of one job.",
                 [](V v, P& o) { return Assign(ParseNonEmpty(v), o.options.rdzv_id); }},
                {"rdzv-conf", 0, ValueKind::kValue, kFromAll, kJsonString | kJsonObject,
                 FlagGroup::kRendezvous, "K=V,...", "",
                 "Extra rendezvous settings, e.g. join_timeout=900.",
                 [](V v, P& o) {
                   return Assign(rdzv::Settings::ParseConfText(v), o.options.rdzv_conf);
                 }},
                {"standalone", 0, ValueKind::kSwitch, kFromAll, kJsonBool, FlagGroup::kRendezvous,
                 "", "",
                 "Single node: rendezvous in-process (c10d at localhost:0) with a fresh --rdzv-id.",
                 [](V v, P& o) { return Assign(ParseBool(v), o.options.standalone); }},
                {"master-addr", 0, ValueKind::kValue, kFromAll, kJsonString, FlagGroup::kRendezvous,
                 "ADDR", "127.0.0.1", "Address of node 0 for static rendezvous.",
                 [](V v, P& o) { return Assign(ParseNonEmpty(v), o.options.master_addr); }},
                {"master-port", 0, ValueKind::kValue, kFromAll, kIntOrText, FlagGroup::kRendezvous,
                 "PORT", "0 on one node, 29500 on several", "Port of the worker store on node 0.",
                 [](V v, P& o) -> Status {
                   auto port = ParsePort(v);
                   if (!port.ok()) return port.status();
                   o.options.master_port = *port;
                   return Status::Ok();
                 }},
                {"local-addr", 0, ValueKind::kValue, kFromAll, kJsonString, FlagGroup::kRendezvous,
                 "ADDR", "the address that reaches the rendezvous",
                 "Address this node advertises to the others.",
                 [](V v, P& o) {
                   return Assign(Result<std::string>(std::string(v)), o.options.local_addr);
                 }},

                {"store-allow", 0, ValueKind::kValue, kFromAll, kJsonString, FlagGroup::kRendezvous,
                 "CIDR,...", "the generation's nodes (elastic), every host (static)",
                 "Hosts whose connections the worker store accepts, besides loopback; "
                 "0.0.0.0/0,::/0 accepts every host.",
                 [](V v, P& o) -> Status {
                   auto cidrs = store::ParseCidrList(v, "");
                   if (!cidrs.ok()) return cidrs.status();
                   o.options.store_allow.clear();
                   for (const store::Cidr& cidr : *cidrs) {
                     o.options.store_allow.push_back(cidr.Text());
                   }
                   return Status::Ok();
                 }},
                {"store-max-keys", 0, ValueKind::kValue, kFromAll, kIntOrText,
                 FlagGroup::kRendezvous, "N", "1000000",
                 "Most keys the worker store holds; a write past it closes its connection.",
                 [](V v, P& o) -> Status {
                   auto count = ParseCount(v);
                   if (!count.ok()) return count.status();
                   o.options.store_max_keys = *count;
                   return Status::Ok();
                 }},
                {"store-max-bytes", 0, ValueKind::kValue, kFromAll, kIntOrText,
                 FlagGroup::kRendezvous, "SIZE", "1G",
                 "Most bytes of keys and values the worker store holds (K, M, G suffixes); a "
                 "write past it closes its connection.",
                 [](V v, P& o) -> Status {
                   auto size = ParseByteSize(v);
                   if (!size.ok()) return size.status();
                   o.options.store_max_bytes = *size;
                   return Status::Ok();
                 }},
                {"store-max-connections", 0, ValueKind::kValue, kFromAll, kIntOrText,
                 FlagGroup::kRendezvous, "N", "262144",
                 "Most connections the worker store holds open at once (torch holds 1 per rank, "
                 "2 on torch 1.13); one past it is refused.",
                 [](V v, P& o) -> Status {
                   auto count = ParseCount(v);
                   if (!count.ok()) return count.status();
                   o.options.store_max_connections = *count;
                   return Status::Ok();
                 }},

                // Workers.
                {"max-restarts", 0, ValueKind::kValue, kFromAll, kIntOrText, FlagGroup::kWorkers,
                 "N", "0", "Restarts of the worker group before the job fails.",
                 [](V v, P& o) { return Assign(ParseNonNegativeInt(v), o.options.max_restarts); }},
                {"monitor-interval", 0, ValueKind::kValue, kFromAll, kNumberOrText,
                 FlagGroup::kWorkers, "SECONDS", "0.1",
                 "Worker health-check period (> 0); exits are noticed at once anyway.",
                 [](V v, P& o) {
                   return Assign(ParseSeconds(v, false), o.options.monitor_interval_s);
                 }},
                {"start-method", 0, ValueKind::kValue, kFromAll, kJsonString, FlagGroup::kWorkers,
                 "spawn|fork|forkserver", "spawn",
                 "Accepted for torchrun compatibility; no effect.",
                 [](V v, P& o) {
                   return Assign(ParseChoice(v, {"spawn", "fork", "forkserver"}),
                                 o.options.start_method);
                 }},
                {"role", 0, ValueKind::kValue, kFromAll, kJsonString, FlagGroup::kWorkers, "NAME",
                 "default", "Role name given to the workers (ROLE_NAME).",
                 [](V v, P& o) { return Assign(ParseNonEmpty(v), o.options.role); }},
                {"module", 'm', ValueKind::kSwitch, kFromAll, kJsonBool, FlagGroup::kWorkers, "",
                 "", "Run SCRIPT as a Python module (python -m SCRIPT).",
                 [](V v, P& o) { return Assign(ParseBool(v), o.options.run_as_module); }},
                {"no-python", 0, ValueKind::kSwitch, kFromAll, kJsonBool, FlagGroup::kWorkers, "",
                 "", "SCRIPT is an executable; run it without Python.",
                 [](V v, P& o) { return Assign(ParseBool(v), o.options.no_python); }},
                {"run-path", 0, ValueKind::kSwitch, kFromAll, kJsonBool, FlagGroup::kWorkers, "",
                 "", "Run SCRIPT with runpy.run_path.",
                 [](V v, P& o) { return Assign(ParseBool(v), o.options.run_path); }},
                {"python", 0, ValueKind::kValue, kFromAll, kJsonString, FlagGroup::kWorkers, "PATH",
                 "$MUSTER_PYTHON, else python3", "Python interpreter that runs SCRIPT.",
                 [](V v, P& o) { return Assign(ParseNonEmpty(v), o.options.python); }},
                {"no-warm-workers", 0, ValueKind::kSwitch, kFromAll, kJsonBool, FlagGroup::kWorkers,
                 "", "",
                 "Start every Python worker with a fresh interpreter (cold) instead of forking it "
                 "from the node's warm process, which has imported the script's torch modules "
                 "once.",
                 [](V v, P& o) { return Assign(ParseBool(v), o.options.no_warm_workers); }},
                {"warm-import", 0, ValueKind::kValue, kFromAll, kJsonArray | kJsonString,
                 FlagGroup::kWorkers, "MODULE,...", "",
                 "Modules the warm process imports besides the torch modules the script imports.",
                 [](V v, P& o) { return Assign(ParseModuleList(v), o.options.warm_imports); }},
                {"shutdown-timeout", 0, ValueKind::kValue, kFromAll, kNumberOrText,
                 FlagGroup::kWorkers, "SECONDS", "30",
                 "Grace between SIGTERM and SIGKILL when stopping workers (>= 0).",
                 [](V v, P& o) {
                   return Assign(ParseSeconds(v, true), o.options.shutdown_timeout_s);
                 }},

                {"hang-timeout", 0, ValueKind::kValue, kFromAll, kNumberOrText, FlagGroup::kWorkers,
                 "auto|off|SECONDS", "auto",
                 "Find hung workers: a worker that reported steps and then none for longer than "
                 "its steps take (auto: learned, 20 s at least) has every rank's stack dumped; "
                 "the rank not where the others wait is reported hung and the job recovers. A "
                 "number kills a silent worker after that many seconds; off or 0 never.",
                 [](V v, P& o) {
                   if (v == "auto" || v == "off") {
                     o.options.hang_auto = v == "auto";
                     o.options.hang_timeout_s = 0;
                     return Status::Ok();
                   }
                   o.options.hang_auto = false;
                   return Assign(ParseSeconds(v, true), o.options.hang_timeout_s);
                 }},
                {"recovery", 0, ValueKind::kValue, kFromAll, kJsonString, FlagGroup::kWorkers,
                 "auto|in-place|restart", "auto",
                 "After a worker fails: start the failed one alone while the others pause and "
                 "rejoin in place when every worker announced it can (the muster Python "
                 "package, muster-train), else restart every worker (auto); the same, warning "
                 "when a worker cannot (in-place); or always restart every worker (restart).",
                 [](V v, P& o) -> Status {
                   auto mode = ParseChoice(v, {"auto", "in-place", "restart"});
                   if (!mode.ok()) return mode.status();
                   o.options.recovery = *mode == "auto"       ? LaunchOptions::Recovery::kAuto
                                        : *mode == "in-place" ? LaunchOptions::Recovery::kInPlace
                                                              : LaunchOptions::Recovery::kRestart;
                   return Status::Ok();
                 }},
                {"recovery-timeout", 0, ValueKind::kValue, kFromAll, kNumberOrText,
                 FlagGroup::kWorkers, "SECONDS", "10",
                 "Bound on each of the pause and the join of an in-place recovery; past it the "
                 "job restarts every worker (> 0).",
                 [](V v, P& o) {
                   return Assign(ParseSeconds(v, false), o.options.recovery_timeout_s);
                 }},

                {"inject", 0, ValueKind::kValue, kFromCommandLine | kFromEnv, 0,
                 FlagGroup::kWorkers, "SPEC", "$MUSTER_INJECT, else none",
                 "Inject a fault (repeatable), e.g. kill-worker,rank=1,step=20 or "
                 "drop-heartbeats:5s,node=1,after=10s; see docs/fault-injection.md.",
                 [](V v, P& o) { return Assign(ParseNonEmpty(v), o.options.inject); }},
                {"inject-seed", 0, ValueKind::kValue, kFromCommandLine | kFromEnv, 0,
                 FlagGroup::kWorkers, "N", "$MUSTER_INJECT_SEED, else 0",
                 "Seed of the random choices in --inject (ranges, rank=any, node=any).",
                 [](V v, P& o) -> Status {
                   const auto seed = ParseDecimal(v);
                   if (!seed)
                     return Status::InvalidArgument(Quote(v) + " must be a non-negative integer");
                   o.options.inject_seed = *seed;
                   return Status::Ok();
                 }},

                // Output.
                {"log-dir", 0, ValueKind::kValue, kFromAll, kJsonString, FlagGroup::kOutput, "DIR",
                 "", "Directory for per-rank log files.",
                 [](V v, P& o) {
                   return Assign(Result<std::string>(std::string(v)), o.options.log_dir);
                 }},
                {"redirects", 'r', ValueKind::kValue, kFromAll, kIntOrText, FlagGroup::kOutput,
                 "STD", "0",
                 "Streams sent to files only: 0 none, 1 stdout, 2 stderr, 3 both; or per local "
                 "rank "
                 "'0:1,1:2'.",
                 [](V v, P& o) { return Assign(ParseStdSpec(v), o.options.redirects); }},
                {"tee", 't', ValueKind::kValue, kFromAll, kIntOrText, FlagGroup::kOutput, "STD",
                 "0", "Streams sent to files and the console (same syntax as --redirects).",
                 [](V v, P& o) { return Assign(ParseStdSpec(v), o.options.tee); }},
                {"local-ranks-filter", 0, ValueKind::kValue, kFromAll, kListOrText,
                 FlagGroup::kOutput, "RANKS", "all",
                 "Console shows only these local ranks, e.g. 0,2.",
                 [](V v,
                    P& o) { return Assign(ParseLocalRanks(v), o.options.local_ranks_filter); }},
                {"duplicate-stdout-filters", 0, ValueKind::kValue, kCliEnv, 0, FlagGroup::kOutput,
                 "TEXT,...", "",
                 "Also copy each line of tee'd stdout (--tee) that contains any of these strings "
                 "to filtered_stdout.log in the attempt's log directory, one file for all local "
                 "ranks; ',,' is a literal comma.",
                 [](V v, P& o) {
                   return Assign(ParseLineFilters(v), o.options.duplicate_stdout_filters);
                 }},
                {"duplicate-stderr-filters", 0, ValueKind::kValue, kCliEnv, 0, FlagGroup::kOutput,
                 "TEXT,...", "", "As --duplicate-stdout-filters, for stderr (filtered_stderr.log).",
                 [](V v, P& o) {
                   return Assign(ParseLineFilters(v), o.options.duplicate_stderr_filters);
                 }},
                {"no-prefix", 0, ValueKind::kSwitch, kFromAll, kJsonBool, FlagGroup::kOutput,
                 "", "", "Do not put \"[rankN]:\" before each line of worker output.",
                 [](V v, P& o) -> Status {
                   auto off = ParseBool(v);
                   if (!off.ok()) return off.status();
                   o.options.prefix_output = !*off;
                   return Status::Ok();
                 }},

                // GPUs.
                {"gpus", 0, ValueKind::kValue, kFromAll, kListOrText, FlagGroup::kGpus,
                 "LIST", "all visible", "GPU ids to use: indices or GPU-/MIG- UUIDs, e.g. 0,1.",
                 [](V v, P& o) { return Assign(ParseGpuList(v), o.options.gpus); }},
                {"gpu-visibility", 0, ValueKind::kValue, kFromAll, kJsonString, FlagGroup::kGpus,
                 "all|isolate", "all",
                 "all: every worker sees every GPU id and LOCAL_RANK indexes the list, so "
                 "torch.cuda.set_device(LOCAL_RANK) picks a GPU of its own; isolate: worker i "
                 "sees only the i-th id (as device 0) while LOCAL_RANK stays i.",
                 [](V v, P& o) -> Status {
                   auto mode = ParseChoice(v, {"all", "isolate"});
                   if (!mode.ok()) return mode.status();
                   o.options.gpu_visibility =
                       *mode == "all" ? GpuVisibility::kAll : GpuVisibility::kIsolate;
                   return Status::Ok();
                 }},
                {"virtual-local-rank", 0, ValueKind::kSwitch, kCliEnv, 0, FlagGroup::kGpus, "", "",
                 "Worker i sees only the i-th GPU id and gets LOCAL_RANK=0, so device 0 is its own "
                 "GPU (torchrun's --virtual-local-rank); needs a GPU id per worker.",
                 [](V v, P& o) { return Assign(ParseBool(v), o.options.virtual_local_rank); }},

                // Accepted so that recent torchrun command lines work unchanged.
                {"event-log-handler", 0, ValueKind::kValue, kFromAll, kJsonString,
                 FlagGroup::kCompat, "NAME", "null", "Accepted; no effect.",
                 [](V v, P& o) { return Assign(ParseNonEmpty(v), o.extras.event_log_handler); }},
                {"numa-binding", 0, ValueKind::kValue, kFromAll, kJsonString, FlagGroup::kCompat,
                 "node|socket|exclusive|core-complex", "", "Accepted; not applied yet.",
                 [](V v, P& o) {
                   return Assign(ParseChoice(v, {"node", "socket", "exclusive", "core-complex"}),
                                 o.extras.numa_binding);
                 }},
                {"signals-to-handle", 0, ValueKind::kValue, kFromAll, kListOrText,
                 FlagGroup::kCompat, "SIGNALS", "SIGTERM,SIGINT,SIGHUP,SIGQUIT",
                 "Signals muster forwards to its workers.",
                 [](V v, P& o) { return Assign(ParseSignalList(v), o.extras.signals_to_handle); }},
                {"logs-specs", 0, ValueKind::kValue, kFromAll, kJsonString, FlagGroup::kCompat,
                 "NAME", "",
                 "Accepted; no effect: it names a torchrun.logs_specs Python entry point, which "
                 "muster cannot load. Worker logs are laid out as by torchrun's default "
                 "(--log-dir, --redirects, --tee).",
                 [](V v, P& o) { return Assign(ParseNonEmpty(v), o.extras.logs_specs); }},

                // General.
                {"health-port", 0, ValueKind::kValue, kFromAll, kIntOrText, FlagGroup::kGeneral,
                 "PORT", "$TORCHELASTIC_HEALTH_CHECK_PORT, else none",
                 "Serve this agent's health (GET /healthz: 200, or 503 and why) and metrics "
                 "(/metrics) on this port, on 0.0.0.0 or --local-addr; 0 picks a free port. See "
                 "docs/kubernetes.md.",
                 [](V v, P& o) -> Status {
                   auto port = ParsePort(v);
                   if (!port.ok()) return port.status();
                   o.options.health_port = *port;
                   return Status::Ok();
                 }},
                {"config", 0, ValueKind::kValue, kCliEnv, 0, FlagGroup::kGeneral, "FILE", "",
                 "JSON file of flag settings (keys are flag names, e.g. \"nproc_per_node\").",
                 [](V v, P& o) { return Assign(ParseNonEmpty(v), o.options.config_file); }},
                {"dry-run", 0, ValueKind::kSwitch, kCliEnv, 0, FlagGroup::kGeneral, "", "",
                 "Print the resolved plan and where each value came from (flag, env, file, "
                 "SLURM, default); start nothing.",
                 [](V v, P& o) { return Assign(ParseBool(v), o.extras.dry_run); }},
                {"help", 'h', ValueKind::kAction, kFromCommandLine, 0, FlagGroup::kGeneral, "", "",
                 "Show this help and exit.", nullptr},
                {"version", 0, ValueKind::kAction, kFromCommandLine, 0, FlagGroup::kGeneral, "", "",
                 "Show the version and exit.", nullptr},

                // `muster launch` only (torch.distributed.launch's own flags).
                {"use-env", 0, ValueKind::kSwitch, kFromCommandLine, 0, FlagGroup::kLaunch, "", "",
                 "Pass no --local_rank argument; the script reads LOCAL_RANK (always set).",
                 [](V v, P& o) { return Assign(ParseBool(v), o.extras.use_env); }},
                {"local-rank-arg", 0, ValueKind::kValue, kFromCommandLine, 0, FlagGroup::kLaunch,
                 "local_rank|local-rank", "local_rank",
                 "The argument that tells each worker its local rank: --local_rank=N (as "
                 "torch.distributed.launch before torch 2.0) or --local-rank=N (2.0 and later).",
                 [](V v, P& o) {
                   return Assign(ParseChoice(v, {"local_rank", "local-rank"}),
                                 o.extras.local_rank_arg);
                 }},
};

}  // namespace

std::span<const FlagSpec> Flags() { return kFlags; }

std::size_t FlagIndex(const FlagSpec& flag) { return static_cast<std::size_t>(&flag - kFlags); }

const FlagSpec* FindFlag(std::string_view name) {
  for (const FlagSpec& flag : kFlags) {
    if (flag.name.size() != name.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < name.size() && same; ++i) {
      same = flag.name[i] == (name[i] == '_' ? '-' : name[i]);
    }
    if (same) return &flag;
  }
  return nullptr;
}

const FlagSpec* FindShortFlag(char name) {
  if (name == 0) return nullptr;
  for (const FlagSpec& flag : kFlags) {
    if (flag.short_name == name) return &flag;
  }
  return nullptr;
}

std::string UnderscoreName(const FlagSpec& flag) { return UnderscoredName(flag.name); }

std::string EnvName(const FlagSpec& flag) {
  std::string out = "PET_";
  for (char c : flag.name) {
    out += c == '-' ? '_' : static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  }
  return out;
}

}  // namespace muster::cli
