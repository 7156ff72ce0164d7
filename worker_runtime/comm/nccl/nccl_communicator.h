// NcclCommunicator: the Communicator over NCCL, for device memory (float32,
// float64, float16, bfloat16) on this process's GPU.
//
// Creation: the device is CommOptions::cuda_device, or the context's local
// rank (device 0 when exactly one device is visible, as when the launcher
// sets CUDA_VISIBLE_DEVICES per worker); cuda_device() reports it, so
// whoever allocates the buffers to reduce puts them there.
// Rank 0 creates the unique id and publishes it under "nccl/unique_id" in
// the store (inside the generation's prefix); the others read it (a one-rank
// world needs no store). The communicator is initialized non-blocking
// (config.blocking = 0) and polled until ready or the timeout. The key is
// fixed: build one NcclCommunicator per generation (per store prefix).
//
// Collectives run on the communicator's own blocking stream (created with
// cudaStreamDefault), so they start after the work the caller queued on the
// legacy default stream; work on the caller's non-blocking streams must be
// synchronized by the caller first. The call then polls cudaStreamQuery and
// ncclCommGetAsyncError until the operation completes, NCCL reports an
// error, or CommOptions::timeout passes; on error or timeout it calls
// ncclCommAbort and throws CommError (kTimeout or kPeerFailed), and every
// later call throws. An enqueue that NCCL refuses as ncclInvalidArgument or
// ncclInvalidUsage throws kInvalidArgument without ncclCommAbort; unlike
// Gloo's, the communicator is not usable afterwards: NCCL keeps the error on
// a non-blocking communicator and refuses every later call the same way (at
// once, never hanging). The call returns only once the result is in `data`
// (the stream is drained). ReduceOp::kAvg is ncclAvg. Barrier is a
// one-element allreduce.
//
// In place (CommOptions::recoverable): a failure, or Interrupt() (from any
// thread; the waiting call sees it at its next poll), revokes the
// communicator (ncclCommRevoke, NCCL >= 2.28) instead of aborting it, so
// Shrink() can make the next generation's communicator from it with
// ncclCommShrink (NCCL >= 2.27): the parent is polled until quiescent, then
// shrunk (NCCL_SHRINK_ABORT when it holds an error), and freed. The child is
// handed out only when NCCL's verdict on the shrink, which it reports on the
// parent (not on the child), is ncclSuccess within the timeout and the child
// has the expected rank and size; otherwise Shrink() frees both and returns
// IoError with NCCL's reason (a half-made child would crash NCCL at its first
// collective). A parent that held an error before the shrink reports it
// again after a good one: such a shrink is refused too, as unproved.
//
// Thread-safety: one thread at a time (see Communicator); Interrupt() from any.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "worker_runtime/comm/abort_latch.h"
#include "worker_runtime/comm/communicator.h"

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
#define MUSTER_NCCL_HAS_SHRINK 1
#else
#define MUSTER_NCCL_HAS_SHRINK 0
#endif
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
#define MUSTER_NCCL_HAS_REVOKE 1
#else
#define MUSTER_NCCL_HAS_REVOKE 0
#endif

namespace muster::runtime {

class NcclCommunicator final : public Communicator {
 public:
  // `store` may be null when ctx.world_size is 1.
  static Result<std::unique_ptr<Communicator>> Create(const Context& ctx, StoreClient* store,
                                                      const CommOptions& options);
  // Finalizes the communicator (bounded by the timeout, then aborts).
  ~NcclCommunicator() override;

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  Backend backend() const override { return Backend::kNccl; }
  int cuda_device() const override { return device_; }

  void AllReduce(void* data, size_t count, DataType type, ReduceOp op) override;
  void Broadcast(void* data, size_t count, DataType type, int root) override;
  void AllGather(const void* send, void* recv, size_t count, DataType type) override;
  void ReduceScatter(const void* send, void* recv, size_t count, DataType type,
                     ReduceOp op) override;
  void Barrier() override;
  void Abort() override;
  void Interrupt() override;
  bool CanShrink() const override;
  Result<std::unique_ptr<Communicator>> Shrink(const std::vector<int>& excluded) override;

 private:
  NcclCommunicator(ncclComm_t comm, cudaStream_t stream, float* barrier_word, int device, int rank,
                   int world_size, std::chrono::milliseconds timeout, bool recoverable);
  // Gives an initialized `comm` its stream and barrier word; aborts it on error.
  static Result<std::unique_ptr<Communicator>> Wrap(ncclComm_t comm, int device, int rank,
                                                    int world_size,
                                                    std::chrono::milliseconds timeout,
                                                    bool recoverable);

  // Checks the enqueue result, then waits for the stream with a deadline.
  void Complete(const char* op, ncclResult_t enqueued);
  [[noreturn]] void Fail(const char* op, CommError::Kind kind, const std::string& detail);
  // Throws when aborted, or fails the call when Interrupt() was called.
  void ThrowIfStopped(const char* op);
  // ncclCommAbort once; comm_ is null afterwards.
  void FreeComm();

  ncclComm_t comm_;  // null once freed
  cudaStream_t stream_;
  float* barrier_word_;  // one float of device memory for Barrier()
  const int device_;
  const int rank_;
  const int world_size_;
  const std::chrono::milliseconds timeout_;
  const bool recoverable_;
  std::atomic<bool> interrupted_{false};  // the one member another thread touches
  AbortLatch latch_{"nccl"};
};

}  // namespace muster::runtime
