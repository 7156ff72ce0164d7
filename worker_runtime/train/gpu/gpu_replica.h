// GpuReplica: the ModelReplica (replica.h) on one GPU, for the NCCL
// communicator. Weights, momentum and float32 gradients live in device
// memory in Mlp's flat layout (mlp.h); the forward and backward products are
// cuBLAS sgemm without TF32 (linear.h), the rest CUDA kernels (kernels.h),
// all queued on one non-blocking compute stream. Gradients of (sum of
// losses) * grad_scale are summed across ranks in float32 buckets by a
// BucketedReducer (bucketed_reducer.h), overlapped with the backward pass;
// that reducer's thread also runs every other collective of the replica.
//
// Ordering: when a bucket's last tensor is queued on the compute stream, a
// CUDA event is recorded there (BucketEvents); the communication thread
// waits for it on the host, then calls the communicator's AllReduce, which
// NCCL runs on its own stream (the caller-synchronizes rule of
// communicator.h). So NCCL sums one bucket while the compute stream goes on
// differentiating earlier layers; a communicator call returns once its
// result is in the buffer, so after the reducer's Finish() the update sees
// the sums with no further wait. Host collectives (AllReduceSum, Broadcast) are staged through a
// device buffer, as NCCL takes device memory only.
//
// Step() returns once the update is applied and its statistics copied back:
// every step ends with the compute stream drained.
//
// Unlike CpuReplica's, gradients are summed in float, not double: the
// weights agree with the CPU path's, and with those of other world sizes, to
// float rounding, not as closely as the CPU path's across world sizes.
//
// Thread-safety: one thread at a time (see ModelReplica); it need not be the
// thread that created it (each call makes the device current).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "common/status.h"
#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/train/bucketed_reducer.h"
#include "worker_runtime/train/gpu/bucket_events.h"
#include "worker_runtime/train/gpu/device_buffer.h"
#include "worker_runtime/train/gpu/linear.h"
#include "worker_runtime/train/gpu/stream.h"
#include "worker_runtime/train/mlp.h"
#include "worker_runtime/train/replica.h"

namespace muster::train::gpu {

class GpuReplica final : public ModelReplica {
 public:
  // Makes `device` current on the calling thread and sets the replica up
  // there: weights and momentum (zero until SetState), gradients, the compute
  // stream, the cuBLAS handle, the reducer and its thread.
  // Errors: IoError naming the device and the CUDA or cuBLAS call that failed.
  // REQUIRES: `comm` is an NCCL communicator on `device`; it outlives the
  // replica.
  static Result<std::unique_ptr<ModelReplica>> Create(runtime::Communicator& comm, int device,
                                                      const ReplicaOptions& options);

  const Mlp& layout() const override { return layout_; }

  void SetState(std::span<const float> params, std::span<const float> momentum) override;
  void GetState(std::span<float> params, std::span<float> momentum) override;
  void BroadcastState(int root) override;

  BatchStats Step(std::span<const float> x, std::span<const int> labels, float grad_scale) override;

  void AllReduceSum(std::span<double> values) override;
  void Broadcast(std::span<double> values, int root) override;

 private:
  GpuReplica(runtime::Communicator& comm, int device, const ReplicaOptions& options);

  // Grows the per-sample buffers to `batch` rows.
  void ReserveBatch(size_t batch);
  // Step() on an empty batch: a zero gradient, reduced and applied.
  BatchStats StepWithoutSamples();
  void MakeCurrent() const;
  // On the communication thread: waits for bucket `index`'s event, then sums it.
  void ReduceBucket(runtime::Communicator& comm, const BucketedReducer::Bucket& bucket,
                    size_t index);
  // Copies host doubles to the staging buffer, runs fn on it on the
  // communication thread, copies the result back.
  void HostCollective(std::span<double> values,
                      const std::function<void(runtime::Communicator&, double*)>& fn);

  Mlp layout_;  // tensors and sizes only: the math is on the device
  const int device_;
  const float lr_;
  const float momentum_factor_;
  Stream stream_;
  Blas blas_;
  DeviceBuffer<float> params_;
  DeviceBuffer<float> momentum_;
  DeviceBuffer<float> grads_;
  // Per layer boundary l (0: the input x) for up to batch_capacity_ rows:
  // activations, and the gradients of the loss with respect to them (l >= 1).
  std::vector<DeviceBuffer<float>> activations_;
  std::vector<DeviceBuffer<float>> deltas_;
  DeviceBuffer<int> labels_;
  DeviceBuffer<double> row_scratch_;  // per-row loss and correctness
  DeviceBuffer<double> stats_;        // the step's loss sum and correct count
  DeviceBuffer<double> staging_;      // host collectives
  size_t batch_capacity_ = 0;
  // One per tensor, so at least one per bucket; made before the reducer,
  // whose thread may wait on them, and destroyed after it.
  BucketEvents bucket_events_;
  BucketedReducer reducer_;  // last: its thread stops before the buffers go
};

}  // namespace muster::train::gpu
