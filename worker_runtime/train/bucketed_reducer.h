// BucketedReducer: sums a (double) gradient buffer across ranks in contiguous
// buckets, on a communication thread of its own, each bucket as soon as the
// backward pass has finished every tensor in it — so communication overlaps
// the rest of the backward pass (with overlap off, everything is sent after
// the backward pass, for comparison).
//
//   reducer.BeginStep();
//   model.ForwardBackward(..., [&](size_t t) { reducer.TensorReady(t); });
//   reducer.Finish();  // every bucket reduced; rethrows a CommError
//
// Buckets are fixed at construction from the tensors' flat layout, so every
// rank issues the same collectives in the same order. The communicator is
// used only by the communication thread; other collectives go through Run().
//
// Thread-safety: the methods are called from one (training) thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/train/mlp.h"

namespace muster::train {

class BucketedReducer {
 public:
  BucketedReducer(runtime::Communicator& comm, std::span<double> grads,
                  const std::vector<ParamTensor>& tensors, size_t bucket_bytes, bool overlap);
  ~BucketedReducer();
  BucketedReducer(const BucketedReducer&) = delete;
  BucketedReducer& operator=(const BucketedReducer&) = delete;

  void BeginStep();
  void TensorReady(size_t tensor);
  void Finish();
  // Runs fn on the communication thread and waits for it; rethrows.
  void Run(const std::function<void(runtime::Communicator&)>& fn);

  size_t bucket_count() const { return buckets_.size(); }

 private:
  struct Bucket {
    size_t offset = 0;  // in values
    size_t size = 0;
    size_t tensors = 0;  // how many tensors it holds
    size_t ready = 0;    // of those, finished this step
  };

  void Enqueue(std::function<void()> task);
  void WaitIdle();  // rethrows the first error of the step
  void Loop();

  runtime::Communicator& comm_;
  std::span<double> grads_;
  bool overlap_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_tensor_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> queue_;
  size_t running_ = 0;
  std::exception_ptr error_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace muster::train
