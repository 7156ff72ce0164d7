// ModelReplica: one rank's copy of the MLP and its optimizer state, and the
// collectives that keep the copies equal. The training loop (trainer.cc) is
// written once against it; where the memory lives is the replica's business:
// host memory over Gloo (CpuReplica, cpu_replica.h) or one GPU over NCCL
// (GpuReplica, gpu/gpu_replica.h).
//
//   replica.SetState(params, momentum);       // rank 0: initial or resumed
//   replica.BroadcastState(0);                // every rank: rank 0's copy
//   BatchStats s = replica.Step(x, labels, 1.0f / global_batch);
//   replica.AllReduceSum(totals);              // loss and accuracy, host doubles
//   replica.GetState(params, momentum);       // for a checkpoint or --out
//
// Every replica keeps Mlp's flat layout (mlp.h): tensors in backward order,
// weights input-major ([in][out]). The host copies that SetState/GetState
// move are in that layout whatever the replica, so checkpoints and --out
// (Mlp::TorchOrder of the host copy) do not depend on it.
//
// Collectives are issued in the same order on every rank: the caller makes
// the same calls on every rank (Step, AllReduceSum, Broadcast,
// BroadcastState).
//
// Errors: a failed or timed-out collective throws runtime::CommError (the
// communicator is aborted; see communicator.h). A failed device call (CUDA,
// cuBLAS) throws DeviceError, whose message names the call; the replica is
// unusable afterwards.
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "worker_runtime/train/mlp.h"

namespace muster::train {

// A device call failed: "cudaMalloc(activations): out of memory".
class DeviceError : public std::runtime_error {
 public:
  explicit DeviceError(const std::string& what) : std::runtime_error(what) {}
};

// What every replica is built from.
struct ReplicaOptions {
  std::vector<int> sizes;  // {features, hidden..., classes}, as Mlp's
  float lr = 0.05f;
  float momentum = 0.9f;
  size_t bucket_bytes = 1 << 20;  // gradient bucket size (at least one tensor per bucket)
  bool overlap = true;            // reduce buckets during the backward pass, not after
};

class ModelReplica {
 public:
  ModelReplica() = default;
  virtual ~ModelReplica() = default;
  ModelReplica(const ModelReplica&) = delete;
  ModelReplica& operator=(const ModelReplica&) = delete;

  // The model's layout: its tensors in flat-buffer order, its initial
  // weights and the export order (the math may run elsewhere).
  virtual const Mlp& layout() const = 0;
  size_t parameter_count() const { return layout().parameter_count(); }

  // Replaces the weights and the momentum with host copies.
  // REQUIRES: both hold parameter_count() values.
  virtual void SetState(std::span<const float> params, std::span<const float> momentum) = 0;
  // Copies the weights and the momentum out to host memory.
  // REQUIRES: both hold parameter_count() values.
  virtual void GetState(std::span<float> params, std::span<float> momentum) = 0;
  // Every rank ends with rank `root`'s weights and momentum.
  virtual void BroadcastState(int root) = 0;

  // One optimizer step on this rank's share of the batch (x: batch x
  // features, row-major; labels in [0, classes)): forward, backward with the
  // gradient of (sum of losses) * grad_scale summed across ranks in buckets
  // overlapped with the backward pass, then SGD with momentum as
  // torch.optim.SGD (dampening 0): v = m v + g; p -= lr v. Returns this
  // rank's loss sum and correct count before the update.
  // Ranks may hold different numbers of samples: each adds the sum of its
  // samples' gradients times grad_scale, so with grad_scale = 1 / (the
  // global batch) the update follows the global batch's mean gradient
  // however it is split. The batch may be empty (x and labels both): the
  // rank then adds zero, still takes part in every bucket's collective, and
  // returns zero statistics.
  virtual BatchStats Step(std::span<const float> x, std::span<const int> labels,
                          float grad_scale) = 0;

  // Small collectives on host memory (a replica on a GPU stages them through
  // device memory): in-place sum over ranks, and broadcast from `root`.
  virtual void AllReduceSum(std::span<double> values) = 0;
  virtual void Broadcast(std::span<double> values, int root) = 0;
};

}  // namespace muster::train
