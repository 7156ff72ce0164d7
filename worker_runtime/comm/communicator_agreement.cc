#include "worker_runtime/comm/communicator_agreement.h"

#include <string>
#include <vector>

namespace muster::runtime {
namespace {

constexpr const char* kDecisionKey = "comm_plan/decision";

constexpr const char* kShrinkOutcomeKey = "comm_plan/shrink_outcome";

std::string MemberKey(int rank) { return "comm_plan/member/" + std::to_string(rank); }
std::string ShrunkKey(int rank) { return "comm_plan/shrunk/" + std::to_string(rank); }

// A rank's report: "ok", or "refused <why>" (the empty text would be
// indistinguishable from a key someone cleared).
std::string EncodeShrunk(const std::string& refused) {
  return refused.empty() ? "ok" : "refused " + refused;
}

}  // namespace

Result<CommunicatorPlan> AgreeOnCommunicatorPlan(StoreClient& store, int rank, int world_size,
                                                 const std::optional<PreviousMembership>& kept,
                                                 std::chrono::milliseconds timeout) {
  if (rank != 0) {
    if (Status s = store.Set(MemberKey(rank), EncodePreviousMembership(kept)); !s.ok()) return s;
    Result<std::string> decision = store.Get(kDecisionKey, timeout);
    if (!decision.ok()) return decision.status();
    return DecodeCommunicatorPlan(*decision);
  }
  // Rank 0 decides alone, so every rank acts on the same plan even when
  // their reads of the members would race with a late writer.
  std::vector<std::optional<PreviousMembership>> by_new_rank{kept};
  for (int r = 1; r < world_size; ++r) {
    Result<std::string> text = store.Get(MemberKey(r), timeout);
    if (!text.ok()) return text.status();
    Result<std::optional<PreviousMembership>> member = DecodePreviousMembership(*text);
    if (!member.ok()) return member.status();
    by_new_rank.push_back(*member);
  }
  CommunicatorPlan plan = PlanCommunicator(by_new_rank);
  if (Status s = store.Set(kDecisionKey, EncodeCommunicatorPlan(plan)); !s.ok()) return s;
  return plan;
}

Result<std::string> AgreeOnShrinkOutcome(StoreClient& store, int rank, int world_size,
                                         const std::string& refused,
                                         std::chrono::milliseconds timeout) {
  if (rank != 0) {
    if (Status s = store.Set(ShrunkKey(rank), EncodeShrunk(refused)); !s.ok()) return s;
    Result<std::string> outcome = store.Get(kShrinkOutcomeKey, timeout);
    if (!outcome.ok()) return outcome.status();
    if (*outcome == "ok") return std::string();
    if (!outcome->starts_with("refused ")) {
      return Status::InvalidArgument("bad shrink outcome '" + *outcome + "' in the store");
    }
    return outcome->substr(8);
  }
  // Rank 0 decides alone, as for the plan: every rank acts on one outcome.
  std::string first = refused.empty() ? "" : "rank 0: " + refused;
  int refusals = refused.empty() ? 0 : 1;
  for (int r = 1; r < world_size; ++r) {
    Result<std::string> text = store.Get(ShrunkKey(r), timeout);
    if (!text.ok()) return text.status();
    if (*text == "ok") continue;
    if (!text->starts_with("refused ")) {
      return Status::InvalidArgument("bad shrink report '" + *text + "' of rank " +
                                     std::to_string(r) + " in the store");
    }
    if (refusals++ == 0) first = "rank " + std::to_string(r) + ": " + text->substr(8);
  }
  if (refusals > 1) first += " (and " + std::to_string(refusals - 1) + " other rank(s))";
  if (Status s = store.Set(kShrinkOutcomeKey, first.empty() ? "ok" : "refused " + first); !s.ok()) {
    return s;
  }
  return first;
}

}  // namespace muster::runtime
