#include "launcher/cli/flag_rules.h"

#include <cstdio>
#include <random>

#include "common/quote.h"
#include "launcher/cli/number_parsers.h"

namespace muster::cli {
namespace {

const RawValue* Given(const RawSettings& given, std::string_view name) {
  return given.Get(*FindFlag(name));
}

// --inject and --inject-seed, else MUSTER_INJECT and MUSTER_INJECT_SEED:
// parsed into options.fault_plan, which stays empty when nothing is injected.
Status ApplyFaultPlan(const RawSettings& given, const EnvLookup& env, LaunchOptions& options) {
  const RawValue* inject = Given(given, "inject");
  const std::optional<uint64_t> seed =
      Given(given, "inject-seed") ? std::optional(options.inject_seed) : std::nullopt;
  auto plan = ResolveFaultPlan(inject ? std::string_view(options.inject) : "",
                               inject ? inject->origin : "--inject", seed, env);
  if (!plan.ok()) return plan.status();
  if (*plan) {
    options.inject_seed = (*plan)->seed;
    options.fault_plan = std::move(*plan);
  }
  return Status::Ok();
}

// --health-port, else torchrun's TORCHELASTIC_HEALTH_CHECK_PORT (empty:
// unset, as with every PET_ variable).
Status ApplyHealthPort(const RawSettings& given, const EnvLookup& env, LaunchOptions& options) {
  if (const RawValue* flag = Given(given, "health-port")) {
    options.health_port_origin = flag->origin;
    return Status::Ok();
  }
  constexpr const char* kTorchVariable = "TORCHELASTIC_HEALTH_CHECK_PORT";
  const std::optional<std::string> text = env ? env(kTorchVariable) : std::nullopt;
  if (!text || text->empty()) return Status::Ok();
  auto port = ParsePort(*text);
  if (!port.ok())
    return Status::InvalidArgument(std::string(kTorchVariable) + ": " + port.status().message());
  options.health_port = *port;
  options.health_port_origin = kTorchVariable;
  return Status::Ok();
}

}  // namespace

std::string RandomRunId() {
  std::random_device device;
  std::mt19937_64 rng((static_cast<std::uint64_t>(device()) << 32) ^ device());
  std::uint64_t hi = rng();
  std::uint64_t lo = rng();
  hi = (hi & ~0xf000ULL) | 0x4000ULL;        // version 4
  lo = (lo & ~(3ULL << 62)) | (2ULL << 62);  // RFC 4122 variant
  char buf[37];
  std::snprintf(buf, sizeof buf, "%08llx-%04llx-%04llx-%04llx-%012llx",
                static_cast<unsigned long long>(hi >> 32),
                static_cast<unsigned long long>((hi >> 16) & 0xffff),
                static_cast<unsigned long long>(hi & 0xffff),
                static_cast<unsigned long long>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xffffffffffffULL));
  return buf;
}

Status ApplyFlagRules(const RawSettings& given, const EnvLookup& env, LaunchOptions& options) {
  // Run modes: each picks a different way to start SCRIPT, so two of them
  // cannot both be meant. Only modes switched on count (PET_MODULE=0 is off).
  const std::pair<bool, std::string_view> modes[] = {{options.run_as_module, "module"},
                                                     {options.no_python, "no-python"},
                                                     {options.run_path, "run-path"}};
  const RawValue* first_mode = nullptr;
  for (const auto& [on, name] : modes) {
    if (!on) continue;
    const RawValue* mode = Given(given, name);
    if (first_mode != nullptr) {
      return Status::InvalidArgument(first_mode->origin + " and " + mode->origin +
                                     " cannot be used together");
    }
    first_mode = mode;
  }

  if (options.standalone) {
    if (options.min_nodes != 1 || options.max_nodes != 1) {
      const RawValue* nnodes = Given(given, "nnodes");
      return Status::InvalidArgument(Given(given, "standalone")->origin +
                                     " runs a single node, but " + nnodes->origin + " is " +
                                     Quote(nnodes->text));
    }
    // As torchrun: standalone owns the rendezvous. Unlike torchrun, an id the
    // user chose is kept, so logs and files can be found by it.
    options.rdzv_backend = "c10d";
    options.rdzv_endpoint = "localhost:0";
    if (Given(given, "rdzv-id") == nullptr) options.rdzv_id = RandomRunId();
  }

  if (options.node_rank >= options.max_nodes) {
    const RawValue* rank = Given(given, "node-rank");
    return Status::InvalidArgument(rank->origin + ": " + Quote(rank->text) +
                                   " must be less than the maximum node count " +
                                   std::to_string(options.max_nodes));
  }

  // Each worker sees only its own GPU under --virtual-local-rank; "all"
  // would promise every worker the whole list.
  if (const RawValue* visibility = Given(given, "gpu-visibility");
      options.virtual_local_rank && visibility != nullptr && visibility->text == "all") {
    return Status::InvalidArgument(Given(given, "virtual-local-rank")->origin + " and " +
                                   visibility->origin +
                                   " all cannot be used together: each worker sees only its own "
                                   "GPU");
  }

  if (const RawValue* python = Given(given, "python")) {
    options.python_origin = python->origin;
  } else {
    std::optional<std::string> from_env = env ? env("MUSTER_PYTHON") : std::nullopt;
    const bool from_muster_python = from_env && !from_env->empty();
    options.python = from_muster_python ? *from_env : "python3";
    options.python_origin = from_muster_python ? "MUSTER_PYTHON" : "";
  }
  if (Status s = ApplyHealthPort(given, env, options); !s.ok()) return s;
  return ApplyFaultPlan(given, env, options);
}

Status ApplyCommandModeRules(const RawSettings& given, CommandMode mode, ParsedFlags& parsed) {
  parsed.extras.mode = mode;
  const RawValue* use_env = Given(given, "use-env");
  const RawValue* rank_arg = Given(given, "local-rank-arg");
  if (mode == CommandMode::kRun) {
    if (const RawValue* flag = use_env ? use_env : rank_arg) {
      return Status::InvalidArgument(flag->origin +
                                     ": only `muster launch` takes it; muster tells workers their "
                                     "local rank in LOCAL_RANK");
    }
    return Status::Ok();
  }
  if (parsed.extras.use_env) {
    if (rank_arg != nullptr) {
      return Status::InvalidArgument(use_env->origin + " and " + rank_arg->origin +
                                     " cannot be used together: --use-env passes no argument");
    }
    return Status::Ok();
  }
  // As torch.distributed.launch: an executable gets no --local_rank it may
  // not understand.
  if (parsed.options.no_python) {
    return Status::InvalidArgument(Given(given, "no-python")->origin +
                                   " needs --use-env with `muster launch`");
  }
  parsed.options.local_rank_flag = "--" + parsed.extras.local_rank_arg;
  return Status::Ok();
}

}  // namespace muster::cli
