// SoloCommunicator: the communicator of a one-rank Gloo job, on host memory
// and without a store. Every collective of one rank leaves its data as it is
// (a sum or an average over one rank is the value; allgather and
// reduce_scatter copy `send` to `recv`). It validates arguments as
// GlooCommunicator does (float32 and float64 only; broadcast root 0), so a
// program behaves alike at one rank and at more. CreateCommunicator returns
// it for world size 1 when the backend resolves to Gloo.
//
// Errors: CommError kInvalidArgument for a bad argument (usable afterwards);
// after Abort(), every call throws kInternal.
//
// Thread-safety: one thread at a time (see Communicator).
#pragma once

#include "worker_runtime/comm/abort_latch.h"
#include "worker_runtime/comm/communicator.h"

namespace muster::runtime {

class SoloCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  Backend backend() const override { return Backend::kGloo; }

  void AllReduce(void* data, size_t count, DataType type, ReduceOp op) override;
  void Broadcast(void* data, size_t count, DataType type, int root) override;
  void AllGather(const void* send, void* recv, size_t count, DataType type) override;
  void ReduceScatter(const void* send, void* recv, size_t count, DataType type,
                     ReduceOp op) override;
  void Barrier() override;
  void Abort() override;

 private:
  // Throws when aborted or when `type` is not a host float type.
  void Check(const char* op, DataType type) const;

  AbortLatch latch_{"solo"};
};

}  // namespace muster::runtime
