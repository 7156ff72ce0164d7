// How a generation formed in place gets its communicator: by shrinking the
// last generation's one, or by creating a new one.
//
// Shrinking (NCCL's ncclCommShrink) keeps the surviving ranks' connections
// and skips the unique-id exchange and most of NCCL's init; it applies only
// when the new world is the old one minus some ranks, in the same order:
// every rank of the new generation held the same previous communicator
// (still shrinkable: kept, not aborted), the world got smaller, and new
// ranks follow old ranks. Anything else (a replacement or newcomer process,
// a world that keeps its size or grows, a reordering, ranks from two
// different communicators) creates a new communicator.
//
//   std::vector<std::optional<PreviousMembership>> by_new_rank = ...;
//   CommunicatorPlan plan = PlanCommunicator(by_new_rank);
//   if (plan.kind == CommunicatorPlan::Kind::kShrink) comm->Shrink(plan.excluded);
//
// The encodings travel through the generation's store (communicator
// agreement, communicator_agreement.h); a decoding error names the bad text.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace muster::runtime {

// Where a rank was in the communicator it kept from the last generation.
struct PreviousMembership {
  std::string communicator_id;  // the same on every rank of that communicator
  int rank = 0;
  int world_size = 0;
  bool operator==(const PreviousMembership&) const = default;
};

struct CommunicatorPlan {
  enum class Kind { kCreate, kShrink };
  Kind kind = Kind::kCreate;
  std::vector<int> excluded;  // kShrink: the old ranks left out, ascending
  std::string why;            // kCreate: why no shrink (for the log)
  bool operator==(const CommunicatorPlan&) const = default;
};

// `by_new_rank[r]`: what new rank r kept, nullopt when it kept nothing.
CommunicatorPlan PlanCommunicator(
    const std::vector<std::optional<PreviousMembership>>& by_new_rank);

// "-" for nullopt, else "<rank> <world_size> <communicator_id>".
std::string EncodePreviousMembership(const std::optional<PreviousMembership>& membership);
Result<std::optional<PreviousMembership>> DecodePreviousMembership(std::string_view text);

// "create <why>" or "shrink <r1,r2,...>".
std::string EncodeCommunicatorPlan(const CommunicatorPlan& plan);
Result<CommunicatorPlan> DecodeCommunicatorPlan(std::string_view text);

}  // namespace muster::runtime
