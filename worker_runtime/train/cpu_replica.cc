#include "worker_runtime/train/cpu_replica.h"

#include <algorithm>

namespace muster::train {

using runtime::Communicator;
using runtime::DataType;

CpuReplica::CpuReplica(Communicator& comm, const ReplicaOptions& options)
    : model_(options.sizes),
      lr_(options.lr),
      momentum_factor_(options.momentum),
      params_(model_.parameter_count()),
      momentum_(model_.parameter_count(), 0.0f),
      grads_(model_.parameter_count()),
      reducer_(comm, model_.tensors(), sizeof(double), options.bucket_bytes, options.overlap,
               {.reduce = [this](Communicator& c, const BucketedReducer::Bucket& b, size_t) {
                 c.AllReduce(grads_.data() + b.offset, b.size, DataType::kFloat64,
                             runtime::ReduceOp::kSum);
               }}) {}

void CpuReplica::SetState(std::span<const float> params, std::span<const float> momentum) {
  std::copy(params.begin(), params.end(), params_.begin());
  std::copy(momentum.begin(), momentum.end(), momentum_.begin());
}

void CpuReplica::GetState(std::span<float> params, std::span<float> momentum) {
  std::copy(params_.begin(), params_.end(), params.begin());
  std::copy(momentum_.begin(), momentum_.end(), momentum.begin());
}

void CpuReplica::BroadcastState(int root) {
  reducer_.Run([&](Communicator& c) {
    c.Broadcast(params_.data(), params_.size(), DataType::kFloat32, root);
    c.Broadcast(momentum_.data(), momentum_.size(), DataType::kFloat32, root);
  });
}

BatchStats CpuReplica::Step(std::span<const float> x, std::span<const int> labels,
                            float grad_scale) {
  std::fill(grads_.begin(), grads_.end(), 0.0);
  reducer_.BeginStep();
  const BatchStats stats =
      model_.ForwardBackward(params_, x, labels, grad_scale, grads_,
                             [this](size_t tensor) { reducer_.TensorReady(tensor); });
  reducer_.Finish();
  ApplySgd();
  return stats;
}

void CpuReplica::AllReduceSum(std::span<double> values) {
  reducer_.Run([&](Communicator& c) {
    c.AllReduce(values.data(), values.size(), DataType::kFloat64, runtime::ReduceOp::kSum);
  });
}

void CpuReplica::Broadcast(std::span<double> values, int root) {
  reducer_.Run([&](Communicator& c) {
    c.Broadcast(values.data(), values.size(), DataType::kFloat64, root);
  });
}

// SGD with momentum as torch.optim.SGD (dampening 0): v = m v + g; p -= lr v.
// The double gradient is rounded to float once, after the cross-rank sum.
void CpuReplica::ApplySgd() {
  for (size_t k = 0; k < grads_.size(); ++k) {
    momentum_[k] = momentum_factor_ * momentum_[k] + static_cast<float>(grads_[k]);
    params_[k] -= lr_ * momentum_[k];
  }
}

}  // namespace muster::train
