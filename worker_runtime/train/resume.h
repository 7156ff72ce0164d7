// The resume agreement: where every rank of a muster-train job starts, and
// the checkpoints it starts from.
//
// Rank 0 alone reads --checkpoint-dir: the newest valid checkpoint
// (checkpoint.h skips torn or corrupt files), checked against this run's
// flags, or, when there is none, the initial weights drawn from --seed. It
// broadcasts the outcome, its error included, so that all ranks go on or
// exit together; then its weights and momentum.
//
// A checkpoint holds the step, the weights and momentum, the data position
// (sample_order.h: epoch and position after the step) and, as JSON metadata,
//   {"model": {hidden, depth, features, classes, seed, global_batch,
//              dataset_size},
//    "last_loss": the loss averaged over the step's global batch,
//    "world_size": the world size that wrote it}.
// A checkpoint resumes when its "model" equals this run's and its data
// position is where its step begins: epoch * dataset_size + position ==
// step * global_batch, position <= dataset_size (an epoch's end may be
// written as (e, dataset_size) or (e + 1, 0); muster-train before
// sample_order.h wrote the former). The world size is not among the things it
// must agree with: a checkpoint written by W ranks resumes with any number,
// and the resumed run reads the samples the uninterrupted one would have.
//
// Thread-safety: the functions share no state; call them from the thread
// that uses the replica.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "common/status.h"
#include "worker_runtime/train/replica.h"
#include "worker_runtime/train/train_options.h"

namespace muster::train {

// The host copy of the training state: the weights and momentum as last set
// or copied out of the replica (rank 0's, for a checkpoint or --out), and the
// number of steps done.
struct TrainState {
  std::vector<float> params;
  std::vector<float> momentum;
  uint64_t step = 0;
};

// Where a run starts.
struct ResumePoint {
  bool resumed = false;  // false: step 0 from the seed's weights
  uint64_t step = 0;
  // The loss averaged over step `step`'s global batch; NaN when there is no
  // checkpoint or it predates the field.
  double last_loss = std::numeric_limits<double>::quiet_NaN();
  // The world size that wrote the checkpoint; 0 when unknown (no checkpoint,
  // or one that predates the field).
  int written_world_size = 0;
  // The rank whose in-memory state every rank took when the generation
  // formed in place (live_state.h); -1 when it started from a checkpoint or
  // the seed.
  int live_source = -1;
};

// Every rank calls it with the same options, before the first step. On
// success every rank's replica holds rank 0's weights and momentum (the
// checkpoint's, or the seed's), `state.step` is the step to go on from, and
// on rank 0 `state`'s weights and momentum equal the replica's.
// Errors: rank 0 returns InvalidArgument for a checkpoint of another model or
// data, one whose data position is not where its step begins, or a tensor of
// the wrong size (the message names the directory or the values: "checkpoint
// in 'ckpt' is of another model or data (...); use another --checkpoint-dir"),
// IoError when the directory cannot be listed; the other ranks return the
// same kind with "rank 0 could not resume from --checkpoint-dir (its message
// says why)". A failed collective throws runtime::CommError.
// REQUIRES: `rank` is the replica's communicator's rank; state.params and
// state.momentum hold replica.parameter_count() values, the momentum zero.
Result<ResumePoint> AgreeOnResumePoint(const TrainOptions& options, int rank, ModelReplica& replica,
                                       TrainState& state);

// Writes `state` after `state.step` steps to --checkpoint-dir, with its data
// position, `last_loss` and `world_size` (see above); rank 0 only.
// Errors: IoError from WriteCheckpoint (checkpoint.h), naming the path.
Status SaveCheckpoint(const TrainOptions& options, int world_size, const TrainState& state,
                      double last_loss);

}  // namespace muster::train
