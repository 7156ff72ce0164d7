#include "launcher/cli/slurm_source.h"

#include <optional>
#include <string>

#include "common/decimal.h"
#include "common/host_list.h"
#include "common/quote.h"

namespace muster::cli {
namespace {

// The value of the first of `names` that is set and not empty, with its name.
struct Found {
  std::string name;
  std::string value;
};
std::optional<Found> FirstSet(const EnvLookup& env, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (auto value = env(name); value && !value->empty()) return Found{name, std::move(*value)};
  }
  return std::nullopt;
}

// SLURM ids are decimal; the batch step's id is not a number ("batch" in
// newer SLURM, 4294967294 in older), and it is no srun step either.
constexpr uint64_t kLargestRealStepId = 0xfffffff0;

// A count as an error shows it: as is when it is a number, else quoted, so
// that the message stays one printable line whatever the variable holds.
std::string Count(const std::string& value) { return ParseDecimal(value) ? value : Quote(value); }

void Derive(SlurmSettings& out, std::string_view flag_name, std::string text, std::string origin) {
  out.settings.Set(*FindFlag(flag_name), {std::move(text), std::move(origin), ValueSource::kSlurm});
}

// Ports 20000..32767: below Linux's ephemeral range (32768 and up), where any
// process's outgoing connection may hold a port when the agent binds.
constexpr uint64_t kPortSpan = 12768;

}  // namespace

int SlurmRendezvousPort(uint64_t job_id, uint64_t step_id) {
  return 20000 + static_cast<int>((64 * (job_id % kPortSpan) + step_id % 64 + 1) % kPortSpan);
}

Result<SlurmSettings> ReadSlurmSettings(const EnvLookup& env) {
  SlurmSettings out;
  const auto job = FirstSet(env, {"SLURM_JOB_ID", "SLURM_JOBID"});
  const auto step = FirstSet(env, {"SLURM_STEP_ID", "SLURM_STEPID"});
  if (!job || !step) return out;
  const auto step_number = ParseDecimal(step->value);
  if (!step_number || *step_number > kLargestRealStepId) return out;
  const auto job_number = ParseDecimal(job->value);
  if (!job_number) {
    return Status::InvalidArgument(job->name + "=" + Quote(job->value) +
                                   " is not a SLURM job id (a non-negative integer)");
  }

  const auto nodes = FirstSet(env, {"SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES"});
  const auto tasks = FirstSet(env, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"});
  if (nodes && tasks && nodes->value != tasks->value) {
    const std::string task_count = Count(tasks->value), node_count = Count(nodes->value);
    return Status::InvalidArgument(
        "srun started " + task_count + " tasks on " + node_count + " nodes (" + tasks->name + "=" +
        task_count + ", " + nodes->name + "=" + node_count +
        "), but muster is one agent per node: use srun --ntasks-per-node=1 (muster starts the "
        "workers), or --slurm off");
  }

  const auto node_id = FirstSet(env, {"SLURM_NODEID"});
  if (node_id) {
    const auto id = ParseDecimal(node_id->value, 1 << 30);
    if (!id) {
      return Status::InvalidArgument("SLURM_NODEID=" + Quote(node_id->value) +
                                     " is not a node index (a non-negative integer)");
    }
    out.node_id = static_cast<int>(*id);
    Derive(out, "node-rank", node_id->value, "SLURM_NODEID");
  }
  if (nodes) Derive(out, "nnodes", nodes->value, nodes->name);

  const auto node_list =
      FirstSet(env, {"SLURM_STEP_NODELIST", "SLURM_NODELIST", "SLURM_JOB_NODELIST"});
  if (node_list) {
    auto first_host = FirstHostOfList(node_list->value);
    if (!first_host.ok()) {
      return Status::InvalidArgument(node_list->name + ": " + first_host.status().message());
    }
    const int port = SlurmRendezvousPort(*job_number, *step_number);
    Derive(out, "rdzv-endpoint", *first_host + ":" + std::to_string(port),
           "first host of " + node_list->name + ", port from " + job->name + " and " + step->name);
    Derive(out, "rdzv-backend", "muster", "SLURM step (node 0's agent hosts it)");
  }
  Derive(out, "rdzv-id", job->value + "." + step->value, job->name + "." + step->name);

  // As the launch plan reads GPU ids: a set CUDA_VISIBLE_DEVICES decides
  // alone, and an empty one means no GPU.
  const auto cuda_visible = env("CUDA_VISIBLE_DEVICES");
  const auto gpus = cuda_visible ? FirstSet(env, {"CUDA_VISIBLE_DEVICES"})
                                 : FirstSet(env, {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"});
  if (gpus) Derive(out, "nproc-per-node", "gpu", "one worker per GPU in " + gpus->name);
  out.in_step = true;
  return out;
}

}  // namespace muster::cli
