#include "worker_runtime/comm/communicator_agreement.h"

#include <string>
#include <vector>

namespace muster::runtime {
namespace {

constexpr const char* kDecisionKey = "comm_plan/decision";

std::string MemberKey(int rank) { return "comm_plan/member/" + std::to_string(rank); }

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

}  // namespace muster::runtime
