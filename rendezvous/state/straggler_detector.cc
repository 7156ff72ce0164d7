#include "rendezvous/state/straggler_detector.h"

#include "rendezvous/state/step_rates.h"

namespace muster::rdzv {

std::vector<StragglerChange> StragglerDetector::Evaluate(const std::vector<MemberRate>& members,
                                                         Time now) {
  ++evaluation_;
  rates_.clear();
  for (const MemberRate& m : members) {
    if (m.rate) rates_.push_back(*m.rate);
  }
  const size_t reporting = rates_.size();
  median_ = MedianRate(rates_);
  const bool judging = reporting >= kMinReporting;
  const double threshold = judging ? rule_.fraction * *median_ : 0;

  std::vector<StragglerChange> changes;
  for (const MemberRate& m : members) {
    const bool below = judging && m.rate && *m.rate < threshold;
    auto it = watched_.find(m.node_id);
    if (!below) {
      if (it == watched_.end()) continue;
      if (it->second.flagged) {
        --flagged_;
        changes.push_back(StragglerChange{StragglerChange::Kind::kCleared, std::string(m.node_id),
                                          std::string(m.host), m.rate,
                                          judging ? median_ : std::nullopt});
      }
      watched_.erase(it);
      continue;
    }
    if (it == watched_.end()) it = watched_.emplace(std::string(m.node_id), Watch{now}).first;
    Watch& watch = it->second;
    watch.seen = evaluation_;
    if (!watch.flagged && now - watch.below_since >= rule_.window) {
      watch.flagged = true;
      ++flagged_;
      changes.push_back(StragglerChange{StragglerChange::Kind::kFlagged, std::string(m.node_id),
                                        std::string(m.host), m.rate, median_});
    }
  }
  // Whoever was watched and is no longer a member is forgotten.
  for (auto it = watched_.begin(); it != watched_.end();) {
    if (it->second.seen == evaluation_) {
      ++it;
      continue;
    }
    if (it->second.flagged) --flagged_;
    it = watched_.erase(it);
  }
  return changes;
}

bool StragglerDetector::IsStraggler(std::string_view node_id) const {
  const auto it = watched_.find(node_id);
  return it != watched_.end() && it->second.flagged;
}

}  // namespace muster::rdzv
