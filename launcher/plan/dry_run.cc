#include "launcher/plan/dry_run.h"

#include <algorithm>
#include <sstream>

#include "launcher/plan/recovery_path.h"

namespace muster {
namespace {

std::string Join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

// One table row: name, value, source kind, origin; columns padded so the
// table reads in a terminal.
void Row(std::ostringstream& out, std::string_view name, std::string_view value,
         std::string_view source, std::string_view origin) {
  std::string line = "  " + std::string(name);
  line.resize(std::max<std::size_t>(line.size() + 1, 22), ' ');
  line += value;
  line.resize(std::max<std::size_t>(line.size() + 2, 46), ' ');
  line += source;
  if (!origin.empty()) {
    line.resize(std::max<std::size_t>(line.size() + 1, 54), ' ');
    line += origin;
  }
  out << line << "\n";
}

// `launch`: the command line was `muster launch`, whose own flags are then
// listed too.
void Settings(std::ostringstream& out, const cli::RawSettings& given, bool launch) {
  out << "settings (value, source, origin):\n";
  for (const cli::FlagSpec& flag : cli::Flags()) {
    if (flag.apply == nullptr || flag.name == "dry-run") continue;
    if (flag.group == cli::FlagGroup::kLaunch && !launch) continue;
    if (const cli::RawValue* value = given.Get(flag)) {
      Row(out, flag.name, value->text, cli::ValueSourceName(value->source), value->origin);
    } else {
      const bool is_switch = flag.kind == cli::ValueKind::kSwitch;
      const std::string_view shown = !flag.default_text.empty() ? flag.default_text
                                     : is_switch                ? "off"
                                                                : "-";
      Row(out, flag.name, shown, "default", "");
    }
  }
}

// Who serves the elastic rendezvous. --dry-run starts nothing, so the c10d
// rule (host_rules.h) is described, not decided: that needs a bind attempt.
const char* HostedBy(const ElasticConfig& elastic) {
  if (elastic.is_host) return " (hosted by this agent)";
  if (elastic.host_if_local) {
    return " (hosted by the first agent on the endpoint's host to bind it, unless a daemon "
           "serves it)";
  }
  return " (hosted elsewhere)";
}

void Rendezvous(std::ostringstream& out, const LaunchOptions& options,
                const std::optional<ElasticConfig>& elastic) {
  if (elastic) {
    out << "rendezvous: elastic, " << options.min_nodes << " to " << options.max_nodes
        << " nodes, run id " << options.rdzv_id << ", daemon at " << elastic->host << ":"
        << elastic->port << HostedBy(*elastic) << "\n";
    out << "  node rank and global ranks: given by the rendezvous when the round closes\n";
    return;
  }
  out << "rendezvous: static, " << options.max_nodes << " node"
      << (options.max_nodes == 1 ? "" : "s") << ", this node is node " << options.node_rank << "\n";
}

// Which path a failure will take, and why (DecideRecovery, the rule the
// agent's NodeMachine applies at run time).
void Recovery(std::ostringstream& out, const LaunchOptions& options, bool elastic) {
  out << "recovery: ";
  switch (DecideRecovery(options.recovery, elastic, options.max_nodes)) {
    case RecoveryPath::kRestartAsked:
      out << "restart every worker after a failure (--recovery restart)\n";
      return;
    case RecoveryPath::kRestartAcrossNodes:
      out << "restart every worker after a failure (a static run across nodes cannot pause the "
             "other nodes' workers)\n";
      return;
    case RecoveryPath::kInPlace:
      out << "in place when every worker announced it can (the muster Python package, "
             "muster-train), else restart every worker"
          << (options.max_restarts == 0 && !elastic ? "; --max-restarts 0 allows neither" : "")
          << "\n";
      return;
  }
}

}  // namespace

std::string DryRunReport(const LaunchOptions& options, const cli::ExtraOptions& extras,
                         const cli::RawSettings& given, const LaunchPlan& plan,
                         const std::optional<ElasticConfig>& elastic) {
  std::ostringstream out;
  out << "muster --dry-run: nothing is started\n";
  Settings(out, given, extras.mode == cli::CommandMode::kLaunch);
  for (const auto& note : extras.derived) out << "derived: " << note << "\n";
  Rendezvous(out, options, elastic);
  Recovery(out, options, elastic.has_value());
  if (options.health_port) {
    // Where the settings table shows only --health-port's own sources.
    out << "health endpoint: "
        << (options.local_addr.empty() ? std::string("0.0.0.0") : options.local_addr) << ":"
        << *options.health_port << " (from " << options.health_port_origin
        << "), GET /healthz and /metrics\n";
  }
  out << "GPUs: " << (plan.gpus.ids.empty() ? "none" : Join(plan.gpus.ids, ",")) << " (from "
      << plan.gpus.source << ")\n";
  out << "workers on this node: " << plan.nproc_per_node << ", run id " << plan.run_id << "\n";
  for (int local_rank = 0; local_rank < plan.nproc_per_node; ++local_rank) {
    const WorkerLaunch worker = PlanWorker(plan, local_rank);
    out << "  local rank " << local_rank
        << ": CUDA_VISIBLE_DEVICES=" << worker.cuda_visible_devices.value_or("(inherited)")
        << " LOCAL_RANK=" << (worker.virtual_local_rank ? 0 : local_rank) << "  "
        << Join(worker.argv, " ") << "\n";
  }
  if (!extras.logs_specs.empty()) {
    out << "note: --logs-specs " << extras.logs_specs
        << " has no effect (a Python entry point muster cannot load)\n";
  }
  for (const auto& warning : plan.warnings) out << "warning: " << warning << "\n";
  return out.str();
}

}  // namespace muster
