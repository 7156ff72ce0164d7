// RunTraining: muster-train's whole life as a worker — bootstrap from the
// environment, rendezvous through the store, resume from the newest valid
// checkpoint, train data-parallel, checkpoint, export.
//
// Trains on CPU: every buffer is host memory, so the communicator is Gloo
// ("--backend auto" is Gloo; "--backend nccl" is refused as a bad flag).
// Rank 0 alone reads the checkpoint directory and broadcasts what it found
// (or why it failed), so all ranks resume or exit together.
//
// Returns the process exit status: 0 done; 2 bad input (flags, environment,
// a checkpoint of another model or data); runtime::kExitCommFailure (75)
// when the rendezvous or a collective failed or timed out (a peer died or
// hung); 1 any other failure (I/O, ...). The agent restarts the job after
// any non-zero exit, within its --max-restarts.
// Rank 0 prints progress and, last, "final loss <value>" (the loss averaged
// over the last step's global batch; a run resumed at its last step prints
// the one its checkpoint kept).
#pragma once

#include "worker_runtime/train/train_options.h"

namespace muster::train {

int RunTraining(const TrainOptions& options);

}  // namespace muster::train
