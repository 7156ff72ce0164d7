// SoloCommunicator: the communicator of a one-rank job. Every collective of
// one rank leaves its data as it is (an average over one rank is the value;
// allgather and reduce_scatter copy), so a single process needs no store.
#pragma once

#include <cstring>

#include "worker_runtime/comm/communicator.h"

namespace muster::train {

class SoloCommunicator final : public runtime::Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  runtime::Backend backend() const override { return runtime::Backend::kGloo; }
  void AllReduce(void*, size_t, runtime::DataType, runtime::ReduceOp) override {}
  void Broadcast(void*, size_t, runtime::DataType, int) override {}
  void AllGather(const void* send, void* recv, size_t count, runtime::DataType type) override {
    if (send != recv) std::memmove(recv, send, count * runtime::DataTypeSize(type));
  }
  void ReduceScatter(const void* send, void* recv, size_t count, runtime::DataType type,
                     runtime::ReduceOp) override {
    if (send != recv) std::memmove(recv, send, count * runtime::DataTypeSize(type));
  }
  void Barrier() override {}
  void Abort() override {}
};

}  // namespace muster::train
