#include "worker_runtime/train/live_state.h"

#include <vector>

namespace muster::train {

double LiveStateOffer(bool holds_live_state, uint64_t steps_done) {
  // Exact in a double: steps stay far below 2^53.
  return holds_live_state ? static_cast<double>(steps_done) + 1 : 0;
}

std::optional<int> PickStateSource(std::span<const double> offers) {
  std::optional<int> source;
  for (size_t rank = 0; rank < offers.size(); ++rank) {
    if (offers[rank] <= 0) continue;
    if (!source || offers[rank] > offers[static_cast<size_t>(*source)]) {
      source = static_cast<int>(rank);
    }
  }
  return source;
}

Result<ResumePoint> AgreeOnStart(const TrainOptions& options, int rank, int world_size,
                                 ModelReplica& replica, TrainState& state, bool holds_live_state) {
  // Each rank fills its own slot; the sum is everyone's offers (an
  // all-gather through the one host collective every replica has).
  std::vector<double> offers(static_cast<size_t>(world_size), 0.0);
  offers[static_cast<size_t>(rank)] = LiveStateOffer(holds_live_state, state.step);
  replica.AllReduceSum(offers);
  const std::optional<int> source = PickStateSource(offers);
  if (!source) return AgreeOnResumePoint(options, rank, replica, state);
  if (rank == *source) replica.SetState(state.params, state.momentum);
  replica.BroadcastState(*source);
  state.step = static_cast<uint64_t>(offers[static_cast<size_t>(*source)]) - 1;
  ResumePoint point{.resumed = true, .step = state.step};
  point.live_source = *source;
  return point;
}

}  // namespace muster::train
