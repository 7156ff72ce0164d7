#include "launcher/plan/launch_plan.h"

#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "launcher/cli/spec_parsers.h"
#include "launcher/plan/console_streams.h"
#include "launcher/plan/host_rules.h"
#include "launcher/plan/worker_env.h"
#include "rendezvous/net/tls_context.h"
#include "rendezvous/net/token_file.h"

namespace muster {
namespace {

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

// How the node's GPU ids go round its workers: an error when a worker of
// --virtual-local-rank would have no GPU of its own (torchrun raises then
// too), a warning when workers outnumber the ids otherwise.
Status CheckGpuShare(const LaunchOptions& options, LaunchPlan& plan) {
  const auto& ids = plan.gpus.ids;
  const int workers = plan.nproc_per_node;
  const std::string counts = std::to_string(workers) + " workers per node but " +
                             std::to_string(ids.size()) + " GPU ids (from " + plan.gpus.source +
                             ")";
  // CUDA enumerates one MIG instance per process, so a list of them shows
  // every worker the first one only.
  const auto migs = std::count_if(ids.begin(), ids.end(),
                                  [](const std::string& id) { return id.starts_with("MIG-"); });
  if (!plan.isolate_gpus && migs > 1) {
    plan.warnings.push_back(
        "CUDA shows a process only one MIG instance: with --gpu-visibility all every worker "
        "sees the first; use --gpu-visibility isolate or --virtual-local-rank");
  }
  if (ids.empty() || workers <= static_cast<int>(ids.size())) return Status::Ok();
  if (options.virtual_local_rank) {
    return Status::InvalidArgument("--virtual-local-rank: " + counts +
                                   "; each worker needs a GPU of its own");
  }
  if (plan.isolate_gpus) {
    plan.warnings.push_back("--nproc-per-node " + std::to_string(workers) + " exceeds the " +
                            std::to_string(ids.size()) + " GPU ids from " + plan.gpus.source +
                            "; GPUs are shared round-robin (NCCL refuses two ranks on one GPU)");
  } else {
    plan.warnings.push_back(counts + ": workers with LOCAL_RANK >= " + std::to_string(ids.size()) +
                            " have no GPU at index LOCAL_RANK of CUDA_VISIBLE_DEVICES");
  }
  return Status::Ok();
}

// --duplicate-std*-filters copy lines of tee'd streams only (as torchrun):
// say so when no worker's stream is tee'd to the console.
void AddOutputWarnings(const LaunchOptions& options, LaunchPlan& plan) {
  const std::pair<const std::vector<std::string>*, int> filtered[] = {
      {&options.duplicate_stdout_filters, kStdOut}, {&options.duplicate_stderr_filters, kStdErr}};
  for (const auto& [filters, stream] : filtered) {
    if (filters->empty()) continue;
    bool teed = false;
    for (int lr = 0; lr < plan.nproc_per_node && !teed; ++lr) {
      teed = TeedToConsole(options, lr, stream);
    }
    const char* name = stream == kStdOut ? "stdout" : "stderr";
    if (!teed) {
      plan.warnings.push_back(std::string("--duplicate-") + name +
                              "-filters: no local rank tees its " + name +
                              " to the console (--tee), so filtered_" + name + ".log stays empty");
    }
  }
}

}  // namespace

WorkerLaunch PlanWorker(const LaunchPlan& plan, int local_rank) {
  WorkerLaunch worker;
  worker.argv = plan.argv;
  if (!plan.local_rank_flag.empty()) {
    worker.argv.insert(worker.argv.begin() + static_cast<std::ptrdiff_t>(plan.script_args_at),
                       plan.local_rank_flag + "=" + std::to_string(local_rank));
  }
  worker.cuda_visible_devices = VisibleDevicesFor(plan.gpus.ids, plan.isolate_gpus, local_rank);
  // torchrun's virtual mode with no list to pick from names the GPU by the
  // local rank itself (HIP reads CUDA_VISIBLE_DEVICES too).
  if (plan.virtual_local_rank && !worker.cuda_visible_devices) {
    worker.cuda_visible_devices = std::to_string(local_rank);
  }
  worker.virtual_local_rank = plan.virtual_local_rank;
  return worker;
}

namespace {

// What exec can run: an executable regular file (a directory may have its x
// bit, and execvp passes over it).
bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::optional<std::string> FindExecutable(const std::string& name, const std::string& path_var) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (IsExecutableFile(name)) return name;
    return std::nullopt;
  }
  size_t start = 0;
  while (start <= path_var.size()) {
    size_t end = path_var.find(':', start);
    if (end == std::string::npos) end = path_var.size();
    // An empty PATH entry means the current directory, as in execvp.
    std::string dir = path_var.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (IsExecutableFile(candidate)) return candidate;
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
  plan.isolate_gpus =
      options.gpu_visibility == GpuVisibility::kIsolate || options.virtual_local_rank;
  plan.virtual_local_rank = options.virtual_local_rank;
  auto nproc = ResolveProcsPerNode(options.nproc_per_node, plan.gpus, machine.cpu_count);
  if (!nproc.ok()) return nproc.status();
  plan.nproc_per_node = *nproc;
  if (auto status = CheckGpuShare(options, plan); !status.ok()) return status;
  AddOutputWarnings(options, plan);

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
      const bool chosen = !options.python_origin.empty();
      return Status::InvalidArgument(
          (chosen ? options.python_origin : "--python") + ": '" + options.python +
          "' is not an executable file or not on PATH" +
          (chosen ? "" : " (the default; choose the interpreter with --python or MUSTER_PYTHON)"));
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
  plan.script_args_at = plan.argv.size();
  plan.local_rank_flag = options.local_rank_flag;
  plan.argv.insert(plan.argv.end(), options.script_args.begin(), options.script_args.end());

  // --standalone without --rdzv-id already got a random id from the CLI.
  plan.run_id = options.rdzv_id;
  return plan;
}

namespace {

// The TLS contexts --rdzv-conf's tls_* keys ask for (ElasticConfig).
Status LoadRendezvousTls(const std::map<std::string, std::string>& conf, ElasticConfig& config) {
  const auto file = [&conf](const char* key) {
    const auto it = conf.find(key);
    return rdzv::TlsFile{it == conf.end() ? "" : it->second, std::string("--rdzv-conf ") + key};
  };
  const rdzv::TlsClientFiles client{file("tls_ca"), file("tls_cert"), file("tls_key")};
  if (!client.any()) return Status::Ok();
  auto made = rdzv::TlsContext::ForClient(client, &config.file_warnings);
  if (!made.ok()) return made.status();
  config.tls_client = *made;
  if (!client.cert.given()) return Status::Ok();
  // The same certificate serves when this agent hosts the rendezvous; its
  // peers present theirs, which must chain to tls_ca (mutual, as etcd's
  // peers do). Its warnings were given once already.
  const rdzv::TlsServerFiles server{client.cert, client.key, client.ca};
  auto serving = rdzv::TlsContext::ForServer(server, nullptr);
  if (!serving.ok()) return serving.status();
  config.tls_server = *serving;
  return Status::Ok();
}

}  // namespace

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
  // One node and no rendezvous named: nothing to meet, the static path. A
  // rendezvous named with --rdzv-endpoint is used whatever --nnodes says, as
  // torchrun's agent uses the one it is given (its TLS and token included).
  const bool one_node = options.max_nodes == 1 && options.min_nodes == 1;
  if (!elastic_backend || (one_node && options.rdzv_endpoint.empty())) {
    return std::optional<ElasticConfig>();
  }
  if (options.rdzv_endpoint.empty()) {
    return Status::InvalidArgument("--rdzv-endpoint: required with --rdzv-backend " +
                                   options.rdzv_backend + " across nodes (HOST:PORT of musterd)");
  }
  // The CLI has validated the endpoints; only their parts are needed here.
  auto endpoints = cli::SplitEndpointList(options.rdzv_endpoint);
  if (!endpoints.ok())
    return Status::InvalidArgument("--rdzv-endpoint: " + endpoints.status().message());
  ElasticConfig config;
  for (const HostPort& endpoint : *endpoints) {
    const int port = endpoint.port.value_or(kDefaultRendezvousPort);
    if (endpoints->size() > 1 && port == 0) {
      return Status::InvalidArgument("--rdzv-endpoint: '" + options.rdzv_endpoint +
                                     "' names a replica without a fixed port");
    }
    config.replicas.push_back({endpoint.host, static_cast<uint16_t>(port)});
  }
  config.host = config.replicas.front().host;
  config.port = config.replicas.front().port;
  // Every endpoint on loopback: every node of the job is on this machine, so
  // nothing need listen where other machines reach it (unless --local-addr
  // names an address they would).
  std::vector<std::string_view> hosts;
  for (const Endpoint& e : config.replicas) hosts.push_back(e.host);
  config.loopback_only = AllNodesOnThisMachine(hosts, options.local_addr);
  auto settings = rdzv::Settings::FromConf(options.rdzv_conf);
  if (!settings.ok()) return settings.status();
  config.settings = *settings;
  // torchrun's c10d rule: with no is_host, the agent on the endpoint's host
  // serves (an explicit is_host below wins). --rdzv-backend muster always
  // means a musterd.
  config.host_if_local = options.rdzv_backend == "c10d" && !options.rdzv_conf.contains("is_host");
  if (config.replicas.size() > 1) {
    // Replicas are musterd daemons (musterd --etcd); no agent serves one.
    config.host_if_local = false;
    if (options.rdzv_conf.contains("is_host")) {
      return Status::InvalidArgument("--rdzv-conf: is_host='" + options.rdzv_conf.at("is_host") +
                                     "' cannot go with several --rdzv-endpoint replicas '" +
                                     options.rdzv_endpoint + "': replicas are musterd daemons");
    }
  }
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
      if (auto loose = rdzv::LooseFileWarning("--rdzv-conf token_file", value)) {
        config.file_warnings.push_back(*loose);
      }
    }
  }
  if (Status s = LoadRendezvousTls(options.rdzv_conf, config); !s.ok()) return s;
  if (config.port == 0) {
    return Status::InvalidArgument("--rdzv-endpoint: '" + options.rdzv_endpoint +
                                   "' needs a fixed port: the other nodes must find the daemon");
  }
  return std::optional<ElasticConfig>(config);
}

Result<rdzv::Assignment> StaticAssignment(const LaunchOptions& options, int local_world_size) {
  if (options.min_nodes != options.max_nodes) {
    return Status::InvalidArgument("--nnodes: '" + std::to_string(options.min_nodes) + ":" +
                                   std::to_string(options.max_nodes) +
                                   "' is a range, which needs the elastic rendezvous: add "
                                   "--rdzv-backend c10d --rdzv-endpoint HOST:PORT");
  }
  const int num_nodes = options.max_nodes;
  std::string addr = options.master_addr;
  int port = options.master_port.value_or(num_nodes == 1 ? 0 : 29500);
  // torchrun's static backend takes the master from --rdzv-endpoint when given.
  if (!options.rdzv_endpoint.empty() && options.rdzv_backend == "static") {
    if (options.rdzv_endpoint.find(',') != std::string::npos) {
      return Status::InvalidArgument("--rdzv-endpoint: '" + options.rdzv_endpoint +
                                     "' lists several endpoints, which only the elastic "
                                     "rendezvous takes (--rdzv-backend muster)");
    }
    auto endpoint = cli::SplitEndpoint(options.rdzv_endpoint);
    if (!endpoint.ok()) {
      return Status::InvalidArgument("--rdzv-endpoint: " + endpoint.status().message());
    }
    addr = endpoint->host;
    port = endpoint->port.value_or(port);
  }
  // One node (also a one-node c10d/muster job): every worker is local.
  if (num_nodes == 1 && (options.rdzv_backend != "static" || addr == "localhost")) {
    addr = "127.0.0.1";
  }
  if (options.node_rank < 0 || options.node_rank >= num_nodes) {
    return Status::InvalidArgument("--node-rank: '" + std::to_string(options.node_rank) +
                                   "' must be in [0, " + std::to_string(num_nodes) + ")");
  }
  // Other nodes can only find a port they were told; an ephemeral port works
  // only when every worker is local.
  if (num_nodes > 1 && port == 0) {
    return Status::InvalidArgument(
        "--master-port: '0' needs a fixed port when --nnodes is greater than 1");
  }
  rdzv::Assignment a;
  a.run_id = options.rdzv_id;
  a.generation = 1;
  a.group_rank = options.node_rank;
  a.group_world_size = num_nodes;
  a.local_world_size = local_world_size;
  // Static membership assumes every node runs the same number of workers.
  a.global_rank_offset = options.node_rank * local_world_size;
  a.world_size = num_nodes * local_world_size;
  a.master_addr = addr;
  a.master_port = port;
  a.max_restarts = options.max_restarts;
  return a;
}

std::string InterpreterText(const LaunchOptions& options, const LaunchPlan& plan) {
  return options.python == plan.executable ? plan.executable
                                           : options.python + " (" + plan.executable + ")";
}

}  // namespace muster
