// CpuReplica: the ModelReplica (replica.h) in host memory, for Gloo or the
// one-rank communicator. The model is Mlp (mlp.h); gradients are accumulated
// in double (cpu_kernels.h) and summed across ranks in double buckets by a
// BucketedReducer (bucketed_reducer.h) on its communication thread, which
// also runs every other collective of the replica (a communicator serves one
// thread at a time).
//
// Thread-safety: one thread at a time (see ModelReplica).
// REQUIRES: `comm` takes host memory and outlives the replica.
#pragma once

#include <vector>

#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/train/bucketed_reducer.h"
#include "worker_runtime/train/mlp.h"
#include "worker_runtime/train/replica.h"

namespace muster::train {

class CpuReplica final : public ModelReplica {
 public:
  CpuReplica(runtime::Communicator& comm, const ReplicaOptions& options);

  const Mlp& layout() const override { return model_; }

  void SetState(std::span<const float> params, std::span<const float> momentum) override;
  void GetState(std::span<float> params, std::span<float> momentum) override;
  void BroadcastState(int root) override;

  BatchStats Step(std::span<const float> x, std::span<const int> labels, float grad_scale) override;

  void AllReduceSum(std::span<double> values) override;
  void Broadcast(std::span<double> values, int root) override;

 private:
  void ApplySgd();

  Mlp model_;
  float lr_;
  float momentum_factor_;
  std::vector<float> params_;
  std::vector<float> momentum_;
  std::vector<double> grads_;
  BucketedReducer reducer_;  // last: its thread stops before the buffers go
};

}  // namespace muster::train
