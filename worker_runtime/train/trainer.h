// RunTraining: muster-train's whole life as a worker — bootstrap from the
// environment, rendezvous through the store, resume from the newest valid
// checkpoint, train data-parallel, checkpoint, export.
//
// The backend picks where the model trains (replica_factory.h): NCCL on this
// process's GPU (device LOCAL_RANK, or 0 when it sees one GPU; CUDA kernels,
// cuBLAS, float32 gradients), Gloo on CPU (host memory, double gradients).
// "--backend auto" is NCCL in a build with NCCL where a GPU is visible, else
// Gloo; "--backend nccl" without either is refused as a bad flag, with the
// reason. The training loop is the same for both.
//
// It runs at any world size, with the same flags: every step reads the same
// global batch of samples in the same order whatever the world size, split as
// evenly as possible over the ranks, and each rank's gradient is the sum of
// its samples' gradients over the global batch (sample_order.h), so 1 to N
// ranks end with the same weights (on CPU to double rounding, on GPU to
// float's). Flags: train_options.h. Rank 0 alone reads the checkpoint
// directory and broadcasts what it found (or why it failed), so all ranks
// resume or exit together, whatever world size wrote it (resume.h).
//
// In place (muster --recovery in-place names MUSTER_CONTROL_FD; not when rank
// 0 serves the store itself): it says `hello 1 in-place` and lives through
// generations, the protocol spoken by runtime::InPlaceWorker
// (recovery/in_place_worker.h). A failed collective or muster's `pause` ends a generation
// without exiting (a ControlWatch interrupts a collective blocked on a silent
// peer); it keeps its weights, momentum and steps done, answers `ready`,
// waits for `join` (at most --collective-timeout), forms the next
// generation's communicator under the store prefix `join` names, takes the
// state of the survivor with the most steps done (live_state.h) and answers
// `joined`. A failed checkpoint save then only warns: the state is alive.
//
// Returns the process exit status: 0 done; 2 bad input (flags, environment,
// a checkpoint of another model or data); runtime::kExitCommFailure (75)
// when the rendezvous or a collective failed or timed out (a peer died or
// hung); 1 any other failure (I/O, a failed CUDA call, ...). The agent
// restarts the job after any non-zero exit, within its --max-restarts.
// Rank 0 prints the split ("world size 3, global batch 256: 86 samples on
// rank 0, 85 on ranks 1-2"), progress and, last, "final loss <value>" (the loss averaged
// over the last step's global batch; a run resumed at its last step prints
// the one its checkpoint kept).
#pragma once

#include "worker_runtime/train/train_options.h"

namespace muster::train {

int RunTraining(const TrainOptions& options);

}  // namespace muster::train
