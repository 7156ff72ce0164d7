// The communicator agreement: at the start of a generation formed in place,
// the ranks agree through the generation's store on how their communicator
// is formed (communicator_plan.h). Every rank publishes what it kept from
// the last generation; rank 0 reads them all, plans, and publishes the plan,
// which every other rank reads. One store round trip per rank, and world
// size reads on rank 0.
//
//   auto plan = AgreeOnCommunicatorPlan(*store, ctx.rank, ctx.world_size, kept, timeout);
//
// Keys (under the store client's prefix, the generation's namespace):
// "comm_plan/member/<rank>" and "comm_plan/decision".
// Errors: the store's (Timeout when a rank never publishes), InvalidArgument
// when a published text does not decode (naming it).
//
// After a shrink, the ranks agree the same way on whether every rank got a
// good communicator out of it: a rank whose shrink failed (or whose child
// NCCL could not prove good) must not leave the others with children that
// wait for it forever, so one refusal makes every rank create anew.
//
//   auto refused = AgreeOnShrinkOutcome(*store, ctx.rank, ctx.world_size, why, timeout);
//   if (refused.ok() && refused->empty()) /* keep the shrunk communicator */;
//
// Keys: "comm_plan/shrunk/<rank>" and "comm_plan/shrink_outcome".
//
// Thread-safety: one call of each per rank and generation; the store client
// is the caller's and not shared during the call.
#pragma once

#include <chrono>
#include <optional>

#include "common/status.h"
#include "worker_runtime/comm/communicator_plan.h"
#include "worker_runtime/store/store_client.h"

namespace muster::runtime {

Result<CommunicatorPlan> AgreeOnCommunicatorPlan(StoreClient& store, int rank, int world_size,
                                                 const std::optional<PreviousMembership>& kept,
                                                 std::chrono::milliseconds timeout);

// `refused`: why this rank cannot use what its shrink gave, "" when it can.
// Returns "" when every rank can, else the first refusing rank's reason as
// "rank <r>: <why>" (plus how many others refused), the same on every rank.
// Errors: the store's (Timeout when a rank never publishes).
Result<std::string> AgreeOnShrinkOutcome(StoreClient& store, int rank, int world_size,
                                         const std::string& refused,
                                         std::chrono::milliseconds timeout);

}  // namespace muster::runtime
