// Context from the variables torchrun (or muster acting as torchrun) sets.
#include <string>
#include <utility>

#include "worker_runtime/bootstrap/context_sources.h"
#include "worker_runtime/bootstrap/env_value.h"

namespace muster::runtime {
namespace {

constexpr const char* kTorchrunSource = "torchrun";

}  // namespace

Result<Context> ContextFromTorchrun(const EnvLookup& env) {
  Context ctx;
  ctx.source = Context::Source::kTorchrun;

  auto rank_text = Required(env, kTorchrunSource, "RANK");
  if (!rank_text.ok()) return rank_text.status();
  auto world_text = Required(env, kTorchrunSource, "WORLD_SIZE");
  if (!world_text.ok()) return world_text.status();
  auto addr_text = Required(env, kTorchrunSource, "MASTER_ADDR");
  if (!addr_text.ok()) return addr_text.status();
  auto port_text = Required(env, kTorchrunSource, "MASTER_PORT");
  if (!port_text.ok()) return port_text.status();

  auto rank = NonNegativeInt("RANK", *rank_text);
  if (!rank.ok()) return rank.status();
  auto world = PositiveInt("WORLD_SIZE", *world_text);
  if (!world.ok()) return world.status();
  auto port = Port("MASTER_PORT", *port_text);
  if (!port.ok()) return port.status();
  auto addr = MasterAddr(std::move(*addr_text));
  if (!addr.ok()) return addr.status();
  if (*rank >= *world) return NotBelow("RANK", *rank, "WORLD_SIZE", *world);
  ctx.rank = *rank;
  ctx.world_size = *world;
  ctx.master_addr = std::move(*addr);
  ctx.master_port = *port;

  // Older launchers (torch.distributed.launch, hand-written scripts) may set
  // neither local variable; the job is then taken to be on one node.
  ctx.local_rank = ctx.rank;
  ctx.local_world_size = ctx.world_size;
  if (auto text = env("LOCAL_RANK")) {
    auto local_rank = NonNegativeInt("LOCAL_RANK", *text);
    if (!local_rank.ok()) return local_rank.status();
    ctx.local_rank = *local_rank;
  }
  if (auto text = env("LOCAL_WORLD_SIZE")) {
    auto local_world = PositiveInt("LOCAL_WORLD_SIZE", *text);
    if (!local_world.ok()) return local_world.status();
    ctx.local_world_size = *local_world;
  }
  if (ctx.local_world_size > ctx.world_size) {
    return Status::InvalidArgument("LOCAL_WORLD_SIZE=" + std::to_string(ctx.local_world_size) +
                                   " is above WORLD_SIZE=" + std::to_string(ctx.world_size));
  }
  if (ctx.local_rank >= ctx.local_world_size) {
    return NotBelow("LOCAL_RANK", ctx.local_rank, "LOCAL_WORLD_SIZE", ctx.local_world_size);
  }

  if (auto text = env("TORCHELASTIC_RESTART_COUNT")) {
    auto generation = NonNegativeInt64("TORCHELASTIC_RESTART_COUNT", *text);
    if (!generation.ok()) return generation.status();
    ctx.generation = *generation;
  }
  ctx.run_id = env("TORCHELASTIC_RUN_ID").value_or("");
  if (auto text = env("TORCHELASTIC_USE_AGENT_STORE")) {
    if (*text == "False" || *text == "false" || *text == "0") {
      ctx.rank0_hosts_store = true;
    } else if (*text != "True" && *text != "true" && *text != "1") {
      return Status::InvalidArgument("TORCHELASTIC_USE_AGENT_STORE='" + *text +
                                     "' is not True or False");
    }
  }
  return ctx;
}

}  // namespace muster::runtime
