// RunTraining: muster-train's whole life as a worker — bootstrap from the
// environment, rendezvous through the store, resume from the newest valid
// checkpoint, train data-parallel, checkpoint, export.
//
// Returns the process exit status: 0 done; 2 bad flags or environment;
// runtime::kExitCommFailure (75) when a collective failed or timed out (a
// peer died: the agent restarts the job); 1 any other failure (I/O, ...).
// Rank 0 prints progress and, last, "final loss <value>".
#pragma once

#include "worker_runtime/train/train_options.h"

namespace muster::train {

int RunTraining(const TrainOptions& options);

}  // namespace muster::train
