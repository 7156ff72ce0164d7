// The live-state agreement: where a generation formed in place gets its
// training state. Survivors of the last generation (workers that paused
// instead of exiting) hold their weights, momentum and step in memory; new
// processes (replacements, newcomers) hold nothing. At the start of every
// generation each rank offers what it holds, and the survivor with the most
// steps done broadcasts its state to every rank, so training goes on from
// there: only the step that was in flight when the fault struck is done
// again, and no checkpoint is read. When no rank holds live state (the first
// generation, or every process is new), the checkpoint agreement decides
// (resume.h).
//
// The sample order depends on the step only (sample_order.h), so the step is
// also the data position: nothing else needs to travel.
//
// Thread-safety: pure functions, and one collective sequence per call.
#pragma once

#include <optional>
#include <span>

#include "common/status.h"
#include "worker_runtime/train/replica.h"
#include "worker_runtime/train/resume.h"
#include "worker_runtime/train/train_options.h"

namespace muster::train {

// A rank's offer: 0 when it holds no live state, else its steps done + 1.
double LiveStateOffer(bool holds_live_state, uint64_t steps_done);

// The rank whose state every rank takes: the highest offer, the lowest rank
// among equal ones; nullopt when every offer is 0. Offers are indexed by rank.
std::optional<int> PickStateSource(std::span<const double> offers);

// Where a generation starts. Every rank of the generation calls it with its
// own `holds_live_state` (true: `state` holds this process's weights,
// momentum and steps done from the last generation). On success every
// rank's replica holds the source's weights and momentum and `state.step` its
// steps done; `point.live_source` names the source, or is -1 when the
// checkpoint agreement (AgreeOnResumePoint) decided. Errors: those of
// AgreeOnResumePoint. A failed collective throws runtime::CommError.
// REQUIRES: `rank` and `world_size` are the replica's communicator's;
// state.params and state.momentum hold replica.parameter_count() values.
Result<ResumePoint> AgreeOnStart(const TrainOptions& options, int rank, int world_size,
                                 ModelReplica& replica, TrainState& state, bool holds_live_state);

}  // namespace muster::train
