#include "worker_runtime/train/gpu/gpu_replica.h"

#include <string>

#include "worker_runtime/train/gpu/cuda_check.h"
#include "worker_runtime/train/gpu/kernels.h"

namespace muster::train::gpu {

using runtime::Communicator;
using runtime::DataType;

Result<std::unique_ptr<ModelReplica>> GpuReplica::Create(Communicator& comm, int device,
                                                         const ReplicaOptions& options) {
  try {
    CheckCuda(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
    return std::unique_ptr<ModelReplica>(new GpuReplica(comm, device, options));
  } catch (const std::exception& e) {  // DeviceError, or the thread or memory failing
    return Status::IoError("GPU replica on device " + std::to_string(device) + ": " + e.what());
  }
}

GpuReplica::GpuReplica(Communicator& comm, int device, const ReplicaOptions& options)
    : layout_(options.sizes),
      device_(device),
      lr_(options.lr),
      momentum_factor_(options.momentum),
      blas_(stream_.get()),
      params_(layout_.parameter_count(), "weights"),
      momentum_(layout_.parameter_count(), "momentum"),
      grads_(layout_.parameter_count(), "gradients"),
      activations_(layout_.layers() + 1),
      deltas_(layout_.layers() + 1),
      stats_(2, "batch statistics"),
      bucket_events_(layout_.tensors().size()),
      reducer_(comm, layout_.tensors(), sizeof(float), options.bucket_bytes, options.overlap,
               {.reduce = [this](Communicator& c, const BucketedReducer::Bucket& b,
                                 size_t index) { ReduceBucket(c, b, index); },
                .on_complete =
                    [this](size_t index) {
                      // In stream order: the event completes once every kernel
                      // queued so far, this bucket's gradients included, has.
                      CheckCuda(cudaEventRecord(bucket_events_[index], stream_.get()),
                                "cudaEventRecord(gradient bucket)");
                    },
                // The current device is per thread: the communication
                // thread's must be the communicator's.
                .on_thread_start =
                    [device] {
                      CheckCuda(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) +
                                                           ") on the communication thread");
                    }}) {
  CheckCuda(cudaMemsetAsync(params_.data(), 0, params_.size() * sizeof(float), stream_.get()),
            "cudaMemsetAsync(weights)");
  CheckCuda(cudaMemsetAsync(momentum_.data(), 0, momentum_.size() * sizeof(float), stream_.get()),
            "cudaMemsetAsync(momentum)");
  stream_.Synchronize("zeroing the weights");
}

void GpuReplica::ReduceBucket(Communicator& comm, const BucketedReducer::Bucket& bucket,
                              size_t index) {
  // The host waits, not NCCL's stream (cudaStreamWaitEvent): the
  // communicator runs its collectives on a stream of its own that callers
  // cannot reach, and promises ordering only after the legacy default stream.
  CheckCuda(cudaEventSynchronize(bucket_events_[index]), "cudaEventSynchronize(gradient bucket)");
  comm.AllReduce(grads_.data() + bucket.offset, bucket.size, DataType::kFloat32,
                 runtime::ReduceOp::kSum);
}

void GpuReplica::MakeCurrent() const {
  // Every call does this: the message is built only when it failed.
  if (cudaError_t rc = cudaSetDevice(device_); rc != cudaSuccess) {
    CheckCuda(rc, "cudaSetDevice(" + std::to_string(device_) + ")");
  }
}

void GpuReplica::SetState(std::span<const float> params, std::span<const float> momentum) {
  MakeCurrent();
  CheckCuda(cudaMemcpyAsync(params_.data(), params.data(), params.size_bytes(),
                            cudaMemcpyHostToDevice, stream_.get()),
            "cudaMemcpyAsync(weights to the device)");
  CheckCuda(cudaMemcpyAsync(momentum_.data(), momentum.data(), momentum.size_bytes(),
                            cudaMemcpyHostToDevice, stream_.get()),
            "cudaMemcpyAsync(momentum to the device)");
  stream_.Synchronize("copying the weights to the device");
}

void GpuReplica::GetState(std::span<float> params, std::span<float> momentum) {
  MakeCurrent();
  CheckCuda(cudaMemcpyAsync(params.data(), params_.data(), params.size_bytes(),
                            cudaMemcpyDeviceToHost, stream_.get()),
            "cudaMemcpyAsync(weights to the host)");
  CheckCuda(cudaMemcpyAsync(momentum.data(), momentum_.data(), momentum.size_bytes(),
                            cudaMemcpyDeviceToHost, stream_.get()),
            "cudaMemcpyAsync(momentum to the host)");
  stream_.Synchronize("copying the weights to the host");
}

void GpuReplica::BroadcastState(int root) {
  MakeCurrent();
  // Every call that writes the buffers drains the compute stream before it
  // returns, so NCCL's stream reads them complete.
  reducer_.Run([&](Communicator& c) {
    c.Broadcast(params_.data(), params_.size(), DataType::kFloat32, root);
    c.Broadcast(momentum_.data(), momentum_.size(), DataType::kFloat32, root);
  });
}

void GpuReplica::ReserveBatch(size_t batch) {
  if (batch <= batch_capacity_) return;
  for (size_t l = 0; l <= layout_.layers(); ++l) {
    activations_[l].Reserve(batch * layout_.width(l), "activations");
    if (l > 0) deltas_[l].Reserve(batch * layout_.width(l), "activation gradients");
  }
  labels_.Reserve(batch, "labels");
  row_scratch_.Reserve(2 * batch, "per-sample losses");
  batch_capacity_ = batch;
}

BatchStats GpuReplica::Step(std::span<const float> x, std::span<const int> labels,
                            float grad_scale) {
  MakeCurrent();
  const size_t batch = labels.size();
  if (batch == 0) return StepWithoutSamples();
  ReserveBatch(batch);
  cudaStream_t stream = stream_.get();
  CheckCuda(cudaMemcpyAsync(activations_[0].data(), x.data(), x.size_bytes(),
                            cudaMemcpyHostToDevice, stream),
            "cudaMemcpyAsync(samples to the device)");
  CheckCuda(cudaMemcpyAsync(labels_.data(), labels.data(), labels.size_bytes(),
                            cudaMemcpyHostToDevice, stream),
            "cudaMemcpyAsync(labels to the device)");

  const std::vector<ParamTensor>& t = layout_.tensors();
  for (size_t l = 0; l < layout_.layers(); ++l) {
    const ParamTensor& w = t[layout_.WeightTensor(l)];
    const ParamTensor& b = t[layout_.WeightTensor(l) + 1];
    LinearForward(blas_, activations_[l].data(), params_.data() + w.offset,
                  params_.data() + b.offset, activations_[l + 1].data(), batch, layout_.width(l),
                  layout_.width(l + 1));
    if (l + 1 < layout_.layers()) {
      CheckCuda(Relu(activations_[l + 1].data(), batch * layout_.width(l + 1), stream),
                "kernel Relu");
    }
  }
  CheckCuda(
      SoftmaxCrossEntropy(activations_[layout_.layers()].data(), labels_.data(),
                          deltas_[layout_.layers()].data(), batch, layout_.width(layout_.layers()),
                          grad_scale, row_scratch_.data(), stats_.data(), stream),
      "kernel SoftmaxCrossEntropy");

  reducer_.BeginStep();
  for (size_t l = layout_.layers(); l-- > 0;) {
    const size_t wi = layout_.WeightTensor(l);
    const ParamTensor& w = t[wi];
    const ParamTensor& b = t[wi + 1];
    LinearWeightGrad(blas_, activations_[l].data(), deltas_[l + 1].data(), grads_.data() + w.offset,
                     grads_.data() + b.offset, batch, layout_.width(l), layout_.width(l + 1));
    reducer_.TensorReady(wi);
    reducer_.TensorReady(wi + 1);
    if (l == 0) break;  // no gradient for the input
    LinearInputGrad(blas_, deltas_[l + 1].data(), params_.data() + w.offset, deltas_[l].data(),
                    batch, layout_.width(l), layout_.width(l + 1));
    CheckCuda(ReluGrad(activations_[l].data(), deltas_[l].data(), batch * layout_.width(l), stream),
              "kernel ReluGrad");
  }
  reducer_.Finish();

  CheckCuda(SgdMomentum(params_.data(), momentum_.data(), grads_.data(), params_.size(), lr_,
                        momentum_factor_, stream),
            "kernel SgdMomentum");
  double stats[2] = {0, 0};
  CheckCuda(cudaMemcpyAsync(stats, stats_.data(), sizeof(stats), cudaMemcpyDeviceToHost, stream),
            "cudaMemcpyAsync(batch statistics to the host)");
  stream_.Synchronize("training step");
  return {.loss_sum = stats[0], .correct = stats[1]};
}

// A rank with no sample this step (a global batch smaller than the world
// size) adds a zero gradient: it still reduces every bucket, in the same
// order as the other ranks, and applies the same update. No cuBLAS product
// runs on an empty batch, whose buffers may never have been allocated.
BatchStats GpuReplica::StepWithoutSamples() {
  cudaStream_t stream = stream_.get();
  CheckCuda(cudaMemsetAsync(grads_.data(), 0, grads_.size() * sizeof(float), stream),
            "cudaMemsetAsync(gradients)");
  reducer_.BeginStep();
  // Tensors in flat-buffer (backward) order, as a step with samples reports them.
  for (size_t k = 0; k < layout_.tensors().size(); ++k) reducer_.TensorReady(k);
  reducer_.Finish();
  CheckCuda(SgdMomentum(params_.data(), momentum_.data(), grads_.data(), params_.size(), lr_,
                        momentum_factor_, stream),
            "kernel SgdMomentum");
  stream_.Synchronize("training step without samples");
  return {};
}

void GpuReplica::HostCollective(std::span<double> values,
                                const std::function<void(Communicator&, double*)>& fn) {
  MakeCurrent();
  staging_.Reserve(values.size(), "collective staging");
  CheckCuda(cudaMemcpyAsync(staging_.data(), values.data(), values.size_bytes(),
                            cudaMemcpyHostToDevice, stream_.get()),
            "cudaMemcpyAsync(collective input to the device)");
  stream_.Synchronize("collective input");
  reducer_.Run([&](Communicator& c) { fn(c, staging_.data()); });
  CheckCuda(cudaMemcpyAsync(values.data(), staging_.data(), values.size_bytes(),
                            cudaMemcpyDeviceToHost, stream_.get()),
            "cudaMemcpyAsync(collective result to the host)");
  stream_.Synchronize("collective result");
}

void GpuReplica::AllReduceSum(std::span<double> values) {
  HostCollective(values, [&](Communicator& c, double* data) {
    c.AllReduce(data, values.size(), DataType::kFloat64, runtime::ReduceOp::kSum);
  });
}

void GpuReplica::Broadcast(std::span<double> values, int root) {
  HostCollective(values, [&](Communicator& c, double* data) {
    c.Broadcast(data, values.size(), DataType::kFloat64, root);
  });
}

}  // namespace muster::train::gpu
