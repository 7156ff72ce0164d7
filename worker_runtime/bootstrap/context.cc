#include "worker_runtime/bootstrap/context.h"

#include <cstdlib>
#include <string>
#include <utility>

#include "worker_runtime/bootstrap/context_sources.h"

namespace muster::runtime {

bool TorchrunVariablesPresent(const EnvLookup& env) {
  for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK"}) {
    if (env(name)) return true;
  }
  // sbatch scripts commonly export MASTER_ADDR/MASTER_PORT for all tasks of
  // an `srun`; under SLURM they refine the SLURM source instead.
  if (env("SLURM_PROCID")) return false;
  return env("MASTER_ADDR") || env("MASTER_PORT");
}

Result<std::string> Required(const EnvLookup& env, const char* source, const std::string& name) {
  auto value = env(name);
  if (!value)
    return Status::InvalidArgument(std::string(source) + " variable " + name + " is not set");
  return std::move(*value);
}

Status NotBelow(const char* name, int value, const char* limit_name, int limit) {
  return Status::InvalidArgument(std::string(name) + "=" + std::to_string(value) +
                                 " is not below " + limit_name + "=" + std::to_string(limit));
}

Result<std::string> MasterAddr(std::string addr) {
  if (addr.empty()) return Status::InvalidArgument("MASTER_ADDR='' is not a host");
  return addr;
}

Result<Context> Context::FromEnv(const EnvLookup& env) {
  if (TorchrunVariablesPresent(env)) return ContextFromTorchrun(env);
  if (env("SLURM_PROCID")) return ContextFromSlurm(env);
  return Context{};
}

Result<Context> Context::FromProcessEnv() { return FromEnv(SystemEnv()); }

std::string Context::StoreNamespace() const { return "muster/" + std::to_string(generation) + "/"; }

const char* Context::SourceName(Source source) {
  switch (source) {
    case Source::kTorchrun:
      return "torchrun";
    case Source::kSlurm:
      return "slurm";
    case Source::kSingleProcess:
      return "single-process";
  }
  return "unknown";
}

}  // namespace muster::runtime
