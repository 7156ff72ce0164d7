#include "worker_runtime/train/bucketed_reducer.h"

#include <algorithm>

namespace muster::train {

BucketedReducer::BucketedReducer(runtime::Communicator& comm, std::span<double> grads,
                                 const std::vector<ParamTensor>& tensors, size_t bucket_bytes,
                                 bool overlap)
    : comm_(comm), grads_(grads), overlap_(overlap) {
  const size_t bucket_values = std::max<size_t>(1, bucket_bytes / sizeof(double));
  for (const ParamTensor& t : tensors) {
    if (buckets_.empty() || buckets_.back().size >= bucket_values) {
      buckets_.push_back({t.offset, 0, 0, 0});
    }
    buckets_.back().size += t.size;
    buckets_.back().tensors += 1;
    bucket_of_tensor_.push_back(buckets_.size() - 1);
  }
  thread_ = std::thread([this] { Loop(); });
}

BucketedReducer::~BucketedReducer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void BucketedReducer::BeginStep() {
  for (Bucket& b : buckets_) b.ready = 0;
}

void BucketedReducer::TensorReady(size_t tensor) {
  Bucket& bucket = buckets_[bucket_of_tensor_[tensor]];
  if (++bucket.ready < bucket.tensors || !overlap_) return;
  double* data = grads_.data() + bucket.offset;
  const size_t size = bucket.size;
  Enqueue([this, data, size] {
    comm_.AllReduce(data, size, runtime::DataType::kFloat64, runtime::ReduceOp::kSum);
  });
}

void BucketedReducer::Finish() {
  if (!overlap_) {
    for (const Bucket& bucket : buckets_) {
      double* data = grads_.data() + bucket.offset;
      const size_t size = bucket.size;
      Enqueue([this, data, size] {
        comm_.AllReduce(data, size, runtime::DataType::kFloat64, runtime::ReduceOp::kSum);
      });
    }
  }
  WaitIdle();
}

void BucketedReducer::Run(const std::function<void(runtime::Communicator&)>& fn) {
  Enqueue([this, &fn] { fn(comm_); });
  WaitIdle();
}

void BucketedReducer::Enqueue(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(task));
  }
  changed_.notify_all();
}

void BucketedReducer::WaitIdle() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return queue_.empty() && running_ == 0; });
  if (error_) std::rethrow_exception(error_);
}

void BucketedReducer::Loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    // After a failure the communicator is aborted: skip the rest, keep the first error.
    if (error_) {
      changed_.notify_all();
      continue;
    }
    ++running_;
    lock.unlock();
    std::exception_ptr failure;
    try {
      task();
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    --running_;
    if (failure && !error_) error_ = failure;
    changed_.notify_all();
  }
}

}  // namespace muster::train
