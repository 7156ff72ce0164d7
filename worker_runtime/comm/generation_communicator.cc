#include "worker_runtime/comm/generation_communicator.h"

#include "common/clock.h"
#include "worker_runtime/comm/communicator_agreement.h"

#if MUSTER_HAVE_NCCL
#include "worker_runtime/comm/nccl/nccl_communicator.h"
#endif

namespace muster::runtime {
namespace {

std::chrono::milliseconds Since(Time start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
}

}  // namespace

bool BackendCanShrink(Backend requested) {
#if MUSTER_HAVE_NCCL && MUSTER_NCCL_HAS_SHRINK
  Result<Backend> resolved = ResolveBackendHere(requested);
  return resolved.ok() && *resolved == Backend::kNccl;
#else
  (void)requested;
  return false;
#endif
}

Result<FormedCommunicator> FormGenerationCommunicator(const Context& ctx, StoreClient* store,
                                                      const CommOptions& options, bool agree,
                                                      std::optional<KeptCommunicator> kept) {
  const auto started = Clock::now();
  FormedCommunicator formed{.comm = nullptr, .plan = {}, .took = {}};
  if (agree && ctx.world_size > 1) {
    std::optional<PreviousMembership> membership;
    if (kept) membership = kept->membership;
    Result<CommunicatorPlan> plan =
        AgreeOnCommunicatorPlan(*store, ctx.rank, ctx.world_size, membership, options.timeout);
    if (!plan.ok()) {
      return Status::IoError("agreeing on the communicator: " + plan.status().message());
    }
    formed.plan = std::move(plan).value();
  } else {
    formed.plan.why = agree ? "one rank" : "not formed in place";
  }
  std::string refused_shrink;  // why the planned shrink was given up, for an error
  if (formed.plan.kind == CommunicatorPlan::Kind::kShrink) {
    // The plan shrinks only when every rank kept a communicator.
    if (!kept) return Status::IoError("the communicator plan shrinks, but this rank kept none");
    Result<std::unique_ptr<Communicator>> shrunk = kept->comm->Shrink(formed.plan.excluded);
    std::string refused;
    if (!shrunk.ok()) {
      refused = shrunk.status().message();
    } else if ((*shrunk)->rank() != ctx.rank || (*shrunk)->world_size() != ctx.world_size) {
      refused = "the shrunk communicator made this rank " + std::to_string((*shrunk)->rank()) +
                " of " + std::to_string((*shrunk)->world_size()) + ", not " +
                std::to_string(ctx.rank) + " of " + std::to_string(ctx.world_size);
    }
    // A child is only of use when every rank has its own: one rank without
    // would leave the others' first collective waiting for it until the
    // timeout. So the ranks agree, and all fall back to a new communicator
    // from the store when one refused (the shrink used none of the store's
    // rendezvous keys, so this generation's are still free).
    Result<std::string> outcome =
        AgreeOnShrinkOutcome(*store, ctx.rank, ctx.world_size, refused, options.timeout);
    if (!outcome.ok()) {
      return Status::IoError("agreeing on the shrink" +
                             (refused.empty() ? "" : " (this rank's failed: " + refused + ")") +
                             ": " + outcome.status().message());
    }
    if (outcome->empty()) {
      formed.comm = std::move(shrunk).value();
      formed.took = Since(started);
      return formed;
    }
    // Aborted rather than finalized: its peers drop theirs too.
    if (shrunk.ok()) (*shrunk)->Abort();
    refused_shrink = *outcome;
    formed.plan = CommunicatorPlan{.kind = CommunicatorPlan::Kind::kCreate,
                                   .excluded = {},
                                   .why = "shrink refused by " + *outcome};
  }
  // Freed first: a kept NCCL communicator holds GPU memory and connections.
  kept.reset();
  Result<std::unique_ptr<Communicator>> created = CreateCommunicator(ctx, store, options);
  if (!created.ok() && !refused_shrink.empty()) {
    return Status::IoError(
        "the shrink was refused by " + refused_shrink +
        ", and creating a new communicator failed: " + created.status().message());
  }
  if (!created.ok()) return created.status();
  formed.comm = std::move(created).value();
  formed.took = Since(started);
  return formed;
}

std::optional<KeptCommunicator> KeepForShrink(std::unique_ptr<Communicator>& comm,
                                              const std::string& generation_id) {
  if (!comm || !comm->CanShrink()) return std::nullopt;
  PreviousMembership membership{
      .communicator_id = generation_id, .rank = comm->rank(), .world_size = comm->world_size()};
  return KeptCommunicator{.comm = std::move(comm), .membership = std::move(membership)};
}

}  // namespace muster::runtime
