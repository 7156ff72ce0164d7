#include "worker_runtime/train/gpu/device_reducer.h"

#include <algorithm>
#include <string>

#include "worker_runtime/train/gpu/cuda_check.h"

namespace muster::train::gpu {

DeviceBucketedReducer::DeviceBucketedReducer(runtime::Communicator& comm, int device,
                                             cudaStream_t stream, float* grads,
                                             const std::vector<ParamTensor>& tensors,
                                             size_t bucket_bytes, bool overlap)
    : comm_(comm), device_(device), stream_(stream), grads_(grads), overlap_(overlap) {
  const size_t bucket_values = std::max<size_t>(1, bucket_bytes / sizeof(float));
  for (const ParamTensor& t : tensors) {
    if (buckets_.empty() || buckets_.back().size >= bucket_values) {
      buckets_.push_back({t.offset, 0, 0, 0, nullptr});
    }
    buckets_.back().size += t.size;
    buckets_.back().tensors += 1;
    bucket_of_tensor_.push_back(buckets_.size() - 1);
  }
  try {
    for (Bucket& b : buckets_) {
      // No timing: a timing event costs more to record and is never read.
      CheckCuda(cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming),
                "cudaEventCreateWithFlags(gradient bucket)");
    }
  } catch (...) {
    DestroyEvents();
    throw;
  }
  // A step queues each bucket once before the queue drains, plus one Run().
  queue_.reserve(buckets_.size() + 1);
  thread_ = std::thread([this] { Loop(); });
}

DeviceBucketedReducer::~DeviceBucketedReducer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
  DestroyEvents();
}

void DeviceBucketedReducer::DestroyEvents() {
  for (Bucket& b : buckets_) {
    if (b.done != nullptr) cudaEventDestroy(b.done);
    b.done = nullptr;
  }
}

void DeviceBucketedReducer::BeginStep() {
  for (Bucket& b : buckets_) b.ready = 0;
}

void DeviceBucketedReducer::TensorReady(size_t tensor) {
  const size_t i = bucket_of_tensor_[tensor];
  Bucket& bucket = buckets_[i];
  if (++bucket.ready < bucket.tensors || !overlap_) return;
  EnqueueBucket(i);
}

void DeviceBucketedReducer::Finish() {
  if (!overlap_) {
    for (size_t i = 0; i < buckets_.size(); ++i) EnqueueBucket(i);
  }
  WaitIdle();
}

void DeviceBucketedReducer::Run(const std::function<void(runtime::Communicator&)>& fn) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(kRunSlot);
    run_fn_ = &fn;
  }
  changed_.notify_all();
  WaitIdle();
}

void DeviceBucketedReducer::EnqueueBucket(size_t i) {
  // Recorded on the training thread, in stream order: the event completes
  // once every kernel queued so far — this bucket's gradients included — has.
  CheckCuda(cudaEventRecord(buckets_[i].done, stream_), "cudaEventRecord(gradient bucket)");
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(i);
  }
  changed_.notify_all();
}

void DeviceBucketedReducer::WaitIdle() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return taken_ == queue_.size() && running_ == 0; });
  if (error_) std::rethrow_exception(error_);
}

void DeviceBucketedReducer::Execute(size_t bucket) {
  if (bucket == kRunSlot) {
    (*run_fn_)(comm_);
    return;
  }
  // offset, size and the event handle are fixed at construction; the
  // training thread only writes `ready`, so reading them here needs no lock.
  const Bucket& b = buckets_[bucket];
  // The host waits, not NCCL's stream (cudaStreamWaitEvent): the
  // communicator runs its collectives on a stream of its own that callers
  // cannot reach, and promises ordering only after the legacy default stream.
  CheckCuda(cudaEventSynchronize(b.done), "cudaEventSynchronize(gradient bucket)");
  comm_.AllReduce(grads_ + b.offset, b.size, runtime::DataType::kFloat32, runtime::ReduceOp::kSum);
}

void DeviceBucketedReducer::Loop() {
  // The current device is per thread: this one's must be the communicator's.
  std::exception_ptr setup;
  try {
    CheckCuda(cudaSetDevice(device_),
              "cudaSetDevice(" + std::to_string(device_) + ") on the communication thread");
  } catch (...) {
    setup = std::current_exception();
  }
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stopping_ || taken_ < queue_.size(); });
    // Stopping: whatever is still queued belongs to a step that failed on
    // the training thread; nobody waits for it.
    if (stopping_) return;
    const size_t bucket = queue_[taken_++];
    if (setup && !error_) error_ = setup;
    // After a failure the communicator is aborted: skip the rest, keep the first error.
    if (!error_) {
      ++running_;
      lock.unlock();
      std::exception_ptr failure;
      try {
        Execute(bucket);
      } catch (...) {
        failure = std::current_exception();
      }
      lock.lock();
      --running_;
      if (failure && !error_) error_ = failure;
    }
    if (bucket == kRunSlot) run_fn_ = nullptr;
    if (taken_ == queue_.size()) {
      queue_.clear();
      taken_ = 0;
    }
    changed_.notify_all();
  }
}

}  // namespace muster::train::gpu
