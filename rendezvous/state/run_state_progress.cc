// RunState, training progress: the slow rank by compute time and the run's
// goodput, both from what members' heartbeats carry (Heartbeat::step and
// Heartbeat::compute_us).
#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>

#include "rendezvous/state/run_state.h"

namespace muster::rdzv {

namespace {

std::string Fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string MillisText(const std::optional<double>& ms) {
  return ms ? Fixed(*ms, 1) : std::string("unknown");
}

std::string Seconds(std::chrono::milliseconds ms) {
  return Fixed(static_cast<double>(ms.count()) / 1000.0, 1);
}

}  // namespace

void RunState::NoteProgress(Node& node, const HeartbeatView& hb, Time now) {
  if (hb.step != 0) node.step = hb.step;
  if (hb.compute_us.empty()) return;
  // A node speaks for its own ranks only: entries past its local world size
  // are not its ranks, and are ignored.
  const size_t ranks = std::min(hb.compute_us.size(), static_cast<size_t>(node.local_world_size));
  node.compute_ms.assign(ranks, 0.0);
  for (size_t i = 0; i < ranks; ++i) {
    const double ms = static_cast<double>(hb.compute_us[i]) / 1000.0;
    node.compute_ms[i] = ms;
    if (ms > 0)
      compute_stragglers_.OnCompute(node.global_rank_offset + static_cast<int>(i), ms, now);
  }
  steps_reported_ = true;
}

void RunState::CheckComputeStragglers(Time now, Actions& out) {
  for (const ComputeStragglerChange& change : compute_stragglers_.Evaluate(now)) {
    const Node* holder = nullptr;
    for (const auto& [id, node] : nodes_) {
      if (node.member && change.rank >= node.global_rank_offset &&
          change.rank < node.global_rank_offset + node.local_world_size) {
        holder = &node;
      }
    }
    const std::string host = holder ? holder->host : std::string("unknown");
    const std::string node_id = holder ? holder->node_id : std::string();
    const std::string rank = std::to_string(change.rank);
    // Log() adds the run and keeps the line one line whatever the host says.
    Log(out, change.flagged,
        std::string("event=") + (change.flagged ? "straggler" : "straggler_cleared") +
            " rank=" + rank + " host=" + host + " compute_ms=" + MillisText(change.compute_ms) +
            " median_ms=" + MillisText(change.median_ms) + " node=" + node_id +
            " gen=" + std::to_string(generation_));
    NoteEvent(now, change.flagged ? "straggler" : "straggler_cleared", node_id,
              "rank " + rank + " on " + host + ": " + MillisText(change.compute_ms) +
                  " ms of its own per step against a median of " + MillisText(change.median_ms) +
                  " ms");
  }
}

void RunState::MeterGoodput(Time now) {
  if (phase_ != Phase::kRunning || drain_) return;
  uint64_t oldest = std::numeric_limits<uint64_t>::max();
  bool any = false;
  for (const auto& [id, node] : nodes_) {
    if (!node.member) continue;
    any = true;
    oldest = std::min(oldest, node.step);
  }
  // Every member must have stepped (a 0 is "none yet"), and the run's step
  // must have moved: a run whose steps stand still is not training.
  if (!any || oldest == 0 || oldest <= run_step_) return;
  run_step_ = oldest;
  const std::optional<std::chrono::milliseconds> stood = goodput_.OnNodeStep(oldest, now);
  if (stood && !history_.generations.empty() &&
      history_.generations.back().generation == generation_) {
    history_.generations.back().stood_still = *stood;
  }
}

void RunState::RestartProgress(Time now) {
  goodput_.OnAttemptStarted(now);
  run_step_ = 0;
  compute_stragglers_.Clear();  // ranks are numbered afresh
  for (auto& [id, node] : nodes_) {
    node.step = 0;
    node.compute_ms.clear();
  }
}

void RunState::FinishGoodput(bool succeeded, Time now, Actions& out) {
  MeterGoodput(now);
  goodput_.OnAttemptEnded(now, succeeded);
  final_goodput_ = goodput_.Finish(now);
  if (!final_goodput_) return;
  const Goodput& g = *final_goodput_;
  Log(out, false,
      "event=goodput ratio=" + Fixed(g.ratio(), 3) + " wall_s=" + Seconds(g.wall) +
          " productive_s=" + Seconds(g.productive) +
          " to_first_step_s=" + Seconds(g.to_first_step) + " downtime_s=" + Seconds(g.downtime) +
          " redone_s=" + Seconds(g.redone) + " tail_s=" + Seconds(g.tail) +
          " generations=" + std::to_string(g.attempts));
}

}  // namespace muster::rdzv
