#include "worker_runtime/comm/communicator_plan.h"

#include <climits>

#include "common/decimal.h"
#include "common/quote.h"

namespace muster::runtime {
namespace {

CommunicatorPlan Create(std::string why) {
  return {.kind = CommunicatorPlan::Kind::kCreate, .excluded = {}, .why = std::move(why)};
}

std::optional<int> ParseRank(std::string_view text) {
  std::optional<uint64_t> value = ParseDecimal(text, INT_MAX);
  if (!value) return std::nullopt;
  return static_cast<int>(*value);
}

Status BadText(const char* what, std::string_view text) {
  return Status::InvalidArgument(std::string("bad ") + what + " " + Quote(text));
}

}  // namespace

CommunicatorPlan PlanCommunicator(
    const std::vector<std::optional<PreviousMembership>>& by_new_rank) {
  if (by_new_rank.empty()) return Create("the world is empty");
  for (size_t r = 0; r < by_new_rank.size(); ++r) {
    if (!by_new_rank[r]) return Create("rank " + std::to_string(r) + " is a new process");
  }
  const PreviousMembership& first = *by_new_rank.front();
  const auto new_size = static_cast<int>(by_new_rank.size());
  if (new_size >= first.world_size) {
    return Create("the world does not shrink (" + std::to_string(first.world_size) + " -> " +
                  std::to_string(new_size) + " ranks)");
  }
  int previous_rank = -1;
  for (size_t r = 0; r < by_new_rank.size(); ++r) {
    const PreviousMembership& m = *by_new_rank[r];
    if (m.communicator_id != first.communicator_id || m.world_size != first.world_size) {
      return Create("ranks 0 and " + std::to_string(r) + " come from different communicators");
    }
    // ncclCommShrink keeps the old order: rank r must be the r-th survivor.
    if (m.rank <= previous_rank || m.rank >= m.world_size) {
      return Create("rank " + std::to_string(r) + " was rank " + std::to_string(m.rank) +
                    ", out of the old order");
    }
    previous_rank = m.rank;
  }
  CommunicatorPlan plan{.kind = CommunicatorPlan::Kind::kShrink, .excluded = {}, .why = {}};
  size_t next = 0;  // the next survivor, in old-rank order
  for (int old_rank = 0; old_rank < first.world_size; ++old_rank) {
    if (next < by_new_rank.size() && by_new_rank[next]->rank == old_rank) {
      ++next;
    } else {
      plan.excluded.push_back(old_rank);
    }
  }
  return plan;
}

std::string EncodePreviousMembership(const std::optional<PreviousMembership>& membership) {
  if (!membership) return "-";
  return std::to_string(membership->rank) + " " + std::to_string(membership->world_size) + " " +
         membership->communicator_id;
}

Result<std::optional<PreviousMembership>> DecodePreviousMembership(std::string_view text) {
  if (text == "-") return std::optional<PreviousMembership>();
  const size_t first_space = text.find(' ');
  const size_t second_space =
      first_space == std::string_view::npos ? first_space : text.find(' ', first_space + 1);
  if (second_space == std::string_view::npos || second_space + 1 == text.size()) {
    return BadText("previous membership", text);
  }
  std::optional<int> rank = ParseRank(text.substr(0, first_space));
  std::optional<int> size = ParseRank(text.substr(first_space + 1, second_space - first_space - 1));
  if (!rank || !size || *size == 0 || *rank >= *size) return BadText("previous membership", text);
  return std::optional<PreviousMembership>(
      PreviousMembership{.communicator_id = std::string(text.substr(second_space + 1)),
                         .rank = *rank,
                         .world_size = *size});
}

std::string EncodeCommunicatorPlan(const CommunicatorPlan& plan) {
  if (plan.kind == CommunicatorPlan::Kind::kCreate) return "create " + plan.why;
  std::string text = "shrink ";
  for (size_t i = 0; i < plan.excluded.size(); ++i) {
    if (i > 0) text += ',';
    text += std::to_string(plan.excluded[i]);
  }
  return text;
}

Result<CommunicatorPlan> DecodeCommunicatorPlan(std::string_view text) {
  if (text.starts_with("create ")) return Create(std::string(text.substr(7)));
  if (!text.starts_with("shrink ")) return BadText("communicator plan", text);
  CommunicatorPlan plan{.kind = CommunicatorPlan::Kind::kShrink, .excluded = {}, .why = {}};
  std::string_view list = text.substr(7);
  while (true) {
    const size_t comma = list.find(',');
    std::optional<int> rank = ParseRank(list.substr(0, comma));
    if (!rank || (!plan.excluded.empty() && *rank <= plan.excluded.back())) {
      return BadText("communicator plan", text);
    }
    plan.excluded.push_back(*rank);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return plan;
}

}  // namespace muster::runtime
