#include "rendezvous/state/compute_stragglers.h"

namespace muster::rdzv {

namespace {

rdzv::StragglerRule RuleFor(const ComputeStragglerRule& rule) {
  // A rate below fraction x the median rate is a compute time above
  // median / fraction.
  return rdzv::StragglerRule{1.0 / rule.factor, rule.window};
}

}  // namespace

ComputeStragglers::ComputeStragglers(ComputeStragglerRule rule)
    : rule_(rule), detector_(RuleFor(rule)) {}

void ComputeStragglers::OnCompute(int rank, double compute_ms, Time now) {
  if (!(compute_ms > 0)) return;  // nothing measured (or a NaN)
  auto [it, added] = ranks_.try_emplace(rank);
  Rank& r = it->second;
  r.average_ms = added ? compute_ms : r.average_ms + kSmoothing * (compute_ms - r.average_ms);
  r.last = now;
}

std::vector<ComputeStragglerChange> ComputeStragglers::Evaluate(Time now) {
  std::vector<std::string> ids;
  ids.reserve(ranks_.size());
  for (const auto& [rank, r] : ranks_) ids.push_back(std::to_string(rank));
  std::vector<rdzv::MemberRate> members;
  size_t i = 0;
  for (const auto& [rank, r] : ranks_) {
    std::optional<double> rate;
    if (now - r.last <= rule_.stale) rate = 1000.0 / r.average_ms;
    members.push_back(rdzv::MemberRate{ids[i++], "", rate});
  }
  std::vector<ComputeStragglerChange> changes;
  for (const rdzv::StragglerChange& change : detector_.Evaluate(members, now)) {
    ComputeStragglerChange c;
    c.flagged = change.kind == rdzv::StragglerChange::Kind::kFlagged;
    c.rank = std::stoi(change.node_id);
    if (change.rate) c.compute_ms = 1000.0 / *change.rate;
    if (change.median) c.median_ms = 1000.0 / *change.median;
    changes.push_back(c);
  }
  return changes;
}

void ComputeStragglers::Clear() {
  ranks_.clear();
  detector_ = rdzv::StragglerDetector(RuleFor(rule_));
}

std::optional<double> ComputeStragglers::average_ms(int rank, Time now) const {
  const auto it = ranks_.find(rank);
  if (it == ranks_.end() || now - it->second.last > rule_.stale) return std::nullopt;
  return it->second.average_ms;
}

bool ComputeStragglers::IsFlagged(int rank) const {
  return detector_.IsStraggler(std::to_string(rank));
}

std::optional<double> ComputeStragglers::median_ms() const {
  const std::optional<double> rate = detector_.median();
  if (!rate || !(*rate > 0)) return std::nullopt;
  return 1000.0 / *rate;
}

std::vector<int> ComputeStragglers::flagged() const {
  std::vector<int> ranks;
  for (const auto& [rank, r] : ranks_) {
    if (detector_.IsStraggler(std::to_string(rank))) ranks.push_back(rank);
  }
  return ranks;
}

}  // namespace muster::rdzv
