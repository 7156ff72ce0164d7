#include "launcher/launch_plan.h"

#include <sched.h>
#include <unistd.h>

#include <random>

#include "rendezvous/net/token_file.h"

namespace muster {
namespace {

std::string RandomRunId() {
  std::random_device rd;
  std::mt19937_64 gen((static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(getpid()));
  static const char kHex[] = "0123456789abcdef";
  std::string id;
  for (int i = 0; i < 16; ++i) id.push_back(kHex[gen() % 16]);
  return id;
}

Result<int> ResolveProcsPerNode(const ProcsPerNode& p, const GpuIds& gpus, int cpu_count) {
  switch (p.kind) {
    case ProcsPerNode::Kind::kCount:
      return p.count;
    case ProcsPerNode::Kind::kGpu:
      if (gpus.ids.empty()) {
        return Status::InvalidArgument(
            "--nproc-per-node: 'gpu' but no GPU ids were found (no --gpus, CUDA_VISIBLE_DEVICES, "
            "SLURM_STEP_GPUS, SLURM_JOB_GPUS, and no NVIDIA GPU on this machine)");
      }
      return static_cast<int>(gpus.ids.size());
    case ProcsPerNode::Kind::kCpu:
      return cpu_count;
    case ProcsPerNode::Kind::kAuto:
      return gpus.ids.empty() ? cpu_count : static_cast<int>(gpus.ids.size());
  }
  return Status::InvalidArgument("--nproc-per-node: unknown kind");
}

}  // namespace

std::optional<std::string> FindExecutable(const std::string& name, const std::string& path_var) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (access(name.c_str(), X_OK) == 0) return name;
    return std::nullopt;
  }
  size_t start = 0;
  while (start <= path_var.size()) {
    size_t end = path_var.find(':', start);
    if (end == std::string::npos) end = path_var.size();
    // An empty PATH entry means the current directory, as in execvp.
    std::string dir = path_var.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

MachineFacts ThisMachine(const EnvLookup& env) {
  MachineFacts m;
  m.discover_gpus = DiscoverNvidiaGpus;
  // The cores this process may run on (taskset, cgroup cpusets), not all cores.
  cpu_set_t set;
  CPU_ZERO(&set);
  m.cpu_count = sched_getaffinity(0, sizeof(set), &set) == 0
                    ? CPU_COUNT(&set)
                    : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  if (m.cpu_count < 1) m.cpu_count = 1;
  const std::string path = env("PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  m.find_executable = [path](const std::string& name) { return FindExecutable(name, path); };
  return m;
}

Result<LaunchPlan> MakeLaunchPlan(const LaunchOptions& options, const EnvLookup& env,
                                  const MachineFacts& machine) {
  LaunchPlan plan;
  plan.gpus = ResolveGpuIds(options.gpus, env, machine.discover_gpus);
  plan.isolate_gpus = options.gpu_visibility == GpuVisibility::kIsolate;
  auto nproc = ResolveProcsPerNode(options.nproc_per_node, plan.gpus, machine.cpu_count);
  if (!nproc.ok()) return nproc.status();
  plan.nproc_per_node = *nproc;
  if (plan.isolate_gpus && !plan.gpus.ids.empty() &&
      plan.nproc_per_node > static_cast<int>(plan.gpus.ids.size())) {
    plan.warnings.push_back("--nproc-per-node " + std::to_string(plan.nproc_per_node) +
                            " exceeds the " + std::to_string(plan.gpus.ids.size()) +
                            " GPU ids from " + plan.gpus.source +
                            "; GPUs are shared round-robin (NCCL refuses two ranks on one GPU)");
  }

  if (options.no_python) {
    auto exe = machine.find_executable(options.script);
    if (!exe) {
      return Status::InvalidArgument(
          "script '" + options.script +
          "' (with --no-python) is not an executable file or not on PATH");
    }
    plan.executable = *exe;
    plan.argv = {options.script};
  } else {
    auto python = machine.find_executable(options.python);
    if (!python) {
      return Status::InvalidArgument("--python: '" + options.python +
                                     "' is not an executable file or not on PATH");
    }
    plan.executable = *python;
    // -u: unbuffered output, so worker lines reach the console as they happen.
    plan.argv = {options.python, "-u"};
    if (options.run_as_module) {
      plan.argv.insert(plan.argv.end(), {"-m", options.script});
    } else if (options.run_path) {
      // torchrun's --run-path runs the file through runpy; so does this.
      plan.argv.insert(plan.argv.end(), {"-c",
                                         "import runpy, sys; sys.argv = sys.argv[1:]; "
                                         "runpy.run_path(sys.argv[0], run_name='__main__')",
                                         options.script});
    } else {
      plan.argv.push_back(options.script);
    }
  }
  plan.argv.insert(plan.argv.end(), options.script_args.begin(), options.script_args.end());

  plan.run_id = (options.standalone && options.rdzv_id == "none") ? RandomRunId() : options.rdzv_id;
  return plan;
}

Result<std::optional<ElasticConfig>> MakeElasticConfig(const LaunchOptions& options) {
  const bool elastic_backend = options.rdzv_backend == "c10d" || options.rdzv_backend == "muster";
  if (options.standalone) {
    // One node, the same rendezvous as any job: a daemon embedded in this
    // agent, on loopback, on a port of its own choosing.
    auto settings = rdzv::Settings::FromConf(options.rdzv_conf);
    if (!settings.ok()) return settings.status();
    ElasticConfig config;
    config.host = "127.0.0.1";
    config.port = 0;
    config.is_host = true;
    config.loopback_only = true;
    config.settings = *settings;
    return std::optional<ElasticConfig>(config);
  }
  if (!elastic_backend || (options.max_nodes == 1 && options.min_nodes == 1)) {
    return std::optional<ElasticConfig>();
  }
  if (options.rdzv_endpoint.empty()) {
    return Status::InvalidArgument("--rdzv-endpoint: required with --rdzv-backend " +
                                   options.rdzv_backend + " across nodes (HOST:PORT of musterd)");
  }
  ElasticConfig config;
  const auto colon = options.rdzv_endpoint.rfind(':');
  config.host = options.rdzv_endpoint.substr(0, colon);
  if (!config.host.empty() && config.host.front() == '[' && config.host.back() == ']') {
    config.host = config.host.substr(1, config.host.size() - 2);
  }
  if (colon != std::string::npos) {
    const std::string port_text = options.rdzv_endpoint.substr(colon + 1);
    char* end = nullptr;
    const long parsed = std::strtol(port_text.c_str(), &end, 10);
    if (port_text.empty() || *end != '\0' || parsed < 1 || parsed > 65535) {
      return Status::InvalidArgument("--rdzv-endpoint: '" + options.rdzv_endpoint +
                                     "' has no valid port after ':'");
    }
    config.port = static_cast<uint16_t>(parsed);
  }
  auto settings = rdzv::Settings::FromConf(options.rdzv_conf);
  if (!settings.ok()) return settings.status();
  config.settings = *settings;
  for (const auto& [key, value] : options.rdzv_conf) {
    if (key == "is_host") {
      if (value != "0" && value != "1" && value != "true" && value != "false") {
        return Status::InvalidArgument("--rdzv-conf: is_host='" + value + "' must be 0 or 1");
      }
      config.is_host = value == "1" || value == "true";
    } else if (key == "token_file") {
      auto token = rdzv::ReadTokenFile(value);
      if (!token.ok()) return token.status();
      config.token = *token;
    }
  }
  return std::optional<ElasticConfig>(config);
}

Result<std::unique_ptr<RendezvousHandler>> MakeRendezvous(const LaunchOptions& options) {
  if (options.min_nodes != options.max_nodes) {
    return Status::InvalidArgument("--nnodes: '" + std::to_string(options.min_nodes) + ":" +
                                   std::to_string(options.max_nodes) +
                                   "' is elastic, which needs the musterd rendezvous; this build "
                                   "supports fixed node counts (static backend) only");
  }
  const bool single_node = options.max_nodes == 1;
  if (options.standalone || (single_node && options.rdzv_backend != "static")) {
    // Embedded single-node rendezvous: every worker is local, so the store binds
    // loopback on any free port unless a port was asked for.
    return std::unique_ptr<RendezvousHandler>(
        std::make_unique<StaticRendezvous>(1, 0, "127.0.0.1", options.master_port.value_or(0)));
  }
  if (options.rdzv_backend != "static") {
    return Status::InvalidArgument("--rdzv-backend: '" + options.rdzv_backend +
                                   "' across several nodes needs the musterd rendezvous, which "
                                   "this build does not include; use --rdzv-backend static");
  }
  std::string addr = options.master_addr;
  int port = options.master_port.value_or(single_node ? 0 : 29500);
  // torchrun's static backend takes the master from --rdzv-endpoint when given.
  if (!options.rdzv_endpoint.empty()) {
    const auto colon = options.rdzv_endpoint.rfind(':');
    addr = options.rdzv_endpoint.substr(0, colon);
    if (colon != std::string::npos) {
      const std::string port_text = options.rdzv_endpoint.substr(colon + 1);
      char* end = nullptr;
      const long parsed = std::strtol(port_text.c_str(), &end, 10);
      if (port_text.empty() || *end != '\0' || parsed < 0 || parsed > 65535) {
        return Status::InvalidArgument("--rdzv-endpoint: '" + options.rdzv_endpoint +
                                       "' has no valid port after ':'");
      }
      port = static_cast<int>(parsed);
    }
  }
  if (single_node && (addr == "localhost" || addr.empty())) addr = "127.0.0.1";
  return std::unique_ptr<RendezvousHandler>(
      std::make_unique<StaticRendezvous>(options.max_nodes, options.node_rank, addr, port));
}

}  // namespace muster
