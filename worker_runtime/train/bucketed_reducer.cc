#include "worker_runtime/train/bucketed_reducer.h"

#include <algorithm>

namespace muster::train {

BucketedReducer::BucketedReducer(runtime::Communicator& comm,
                                 const std::vector<ParamTensor>& tensors, size_t value_bytes,
                                 size_t bucket_bytes, bool overlap, Hooks hooks)
    : comm_(comm), overlap_(overlap), hooks_(std::move(hooks)) {
  const size_t bucket_values = std::max<size_t>(1, bucket_bytes / value_bytes);
  for (const ParamTensor& t : tensors) {
    if (buckets_.empty() || buckets_.back().size >= bucket_values) {
      buckets_.push_back({t.offset, 0});
      progress_.emplace_back();
    }
    buckets_.back().size += t.size;
    progress_.back().tensors += 1;
    bucket_of_tensor_.push_back(buckets_.size() - 1);
  }
  // A step queues each bucket once before the queue drains, plus one Run().
  queue_.reserve(buckets_.size() + 1);
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
  for (Progress& p : progress_) p.ready = 0;
}

void BucketedReducer::TensorReady(size_t tensor) {
  const size_t i = bucket_of_tensor_[tensor];
  Progress& p = progress_[i];
  if (++p.ready < p.tensors || !overlap_) return;
  EnqueueBucket(i);
}

void BucketedReducer::Finish() {
  if (!overlap_) {
    for (size_t i = 0; i < buckets_.size(); ++i) EnqueueBucket(i);
  }
  WaitIdle();
}

void BucketedReducer::Run(const std::function<void(runtime::Communicator&)>& fn) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(kRunSlot);
    run_fn_ = &fn;
  }
  changed_.notify_all();
  WaitIdle();
}

void BucketedReducer::EnqueueBucket(size_t i) {
  if (hooks_.on_complete) hooks_.on_complete(i);
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(i);
  }
  changed_.notify_all();
}

void BucketedReducer::WaitIdle() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return taken_ == queue_.size() && running_ == 0; });
  if (error_) std::rethrow_exception(error_);
}

void BucketedReducer::Execute(size_t bucket) {
  if (bucket == kRunSlot) {
    (*run_fn_)(comm_);
    return;
  }
  // Buckets are fixed at construction: reading them here needs no lock.
  hooks_.reduce(comm_, buckets_[bucket], bucket);
}

void BucketedReducer::Loop() {
  if (hooks_.on_thread_start) {
    try {
      hooks_.on_thread_start();
    } catch (...) {
      // Every bucket is then skipped, and WaitIdle rethrows this.
      std::lock_guard failed(mutex_);
      error_ = std::current_exception();
    }
  }
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stopping_ || taken_ < queue_.size(); });
    // Stopping: whatever is still queued belongs to a step that failed on
    // the training thread; nobody waits for it.
    if (stopping_) return;
    const size_t bucket = queue_[taken_++];
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

}  // namespace muster::train
